fn main() {
    let s = load_soothe::sim::Scenario::new(
        "burst 1n",
        1,
        1000,
        20,
        load_soothe::sim::Arrival::Burst { gap_ms: 1 },
    );
    let r = load_soothe::sim::run(&s, load_soothe::Mode::Exact);
    println!("{r:?}");
}

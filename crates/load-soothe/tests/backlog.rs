//! Properties of `simulate_backlog`: a backlog drains through Velero's gate
//! (soft limit, L3.14) and the exact gate (never above the limit).

use load_soothe::{BacklogGate, BacklogInput, Limit, LoadKind, simulate_backlog};
use proptest::prelude::*;

fn any_backlog() -> impl Strategy<Value = BacklogInput> {
    (
        1..8u64,
        0..12u64,
        proptest::collection::vec(proptest::sample::select(LoadKind::ALL.to_vec()), 0..40),
        0..6u32,
    )
        .prop_map(
            |(limit, in_preparation, waiting, node_agents)| BacklogInput {
                limit: Limit::new(limit).expect("positive"),
                in_preparation,
                waiting,
                node_agents,
            },
        )
}

const GATES: [BacklogGate; 2] = [BacklogGate::Velero, BacklogGate::Exact];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_waiting_load_is_admitted_exactly_once(input in any_backlog()) {
        for gate in GATES {
            let run = simulate_backlog(&input, gate);
            let admitted: u64 = run.steps.iter().map(|s| s.admitted).sum();
            prop_assert_eq!(admitted, input.waiting.len() as u64, "{:?}", gate);
            let mut left = input.waiting.len() as u64;
            for s in &run.steps {
                left -= s.admitted;
                prop_assert_eq!(s.waiting, left, "{:?}", gate);
            }
            prop_assert_eq!(left, 0);
        }
    }

    #[test]
    fn the_exact_gate_never_admits_above_the_limit(input in any_backlog()) {
        let limit = input.limit.get();
        for s in simulate_backlog(&input, BacklogGate::Exact).steps {
            if s.admitted > 0 {
                prop_assert!(s.in_preparation <= limit, "{:?}", s);
            }
            prop_assert!(s.in_preparation <= limit.max(input.in_preparation));
        }
    }

    #[test]
    fn velero_admits_only_below_the_limit_and_at_most_node_agents_times_kinds_in_a_step(input in any_backlog()) {
        let limit = input.limit.get();
        let bound = u64::from(input.node_agents.max(1)) * LoadKind::COUNT as u64;
        let run = simulate_backlog(&input, BacklogGate::Velero);
        for s in &run.steps {
            prop_assert!(s.admitted <= bound, "{:?}", s);
            if s.admitted > 0 {
                prop_assert!(s.in_preparation - s.admitted < limit, "admitted at or above the limit: {:?}", s);
            }
        }
        prop_assert!(run.peak() <= input.in_preparation.max(limit - 1 + bound));
    }

    #[test]
    fn the_exact_gate_drains_in_the_steps_its_free_slots_allow(input in any_backlog()) {
        // Reference: the first step has limit - in_preparation slots, every
        // later one the whole limit.
        let limit = input.limit.get();
        let n = input.waiting.len() as u64;
        let first = limit.saturating_sub(input.in_preparation).min(n);
        let expected = 1 + (n - first).div_ceil(limit);
        prop_assert_eq!(simulate_backlog(&input, BacklogGate::Exact).steps.len() as u64, expected);
    }

    #[test]
    fn both_gates_drain_in_at_most_waiting_plus_one_steps(input in any_backlog()) {
        for gate in GATES {
            let run = simulate_backlog(&input, gate);
            prop_assert!(run.steps.len() <= input.waiting.len() + 1, "{:?}", gate);
        }
    }
}

//! Replays every file of the fuzz corpora (`fuzz/corpus/node_agent_config/`,
//! `fuzz/corpus/maintenance_config/`) through their fuzz entry points;
//! crashers added there become regression tests.

use std::path::Path;

#[test]
fn fuzz_corpus_replays_without_panicking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/node_agent_config");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        affinity_translate::fuzz_entry(&data);
        count += 1;
    }
    assert!(
        count >= 10,
        "corpus at {} has only {count} files",
        dir.display()
    );
}

#[test]
fn maintenance_fuzz_corpus_replays_without_panicking() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/maintenance_config");
    let mut count = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        affinity_translate::maintenance::fuzz_entry(&data);
        count += 1;
    }
    assert!(
        count >= 10,
        "corpus at {} has only {count} files",
        dir.display()
    );
}

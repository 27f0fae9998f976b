//! A bed never outlives its process: `kube-testbed up` killed with
//! SIGKILL (no drop, no signal handler) leaves no component behind.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn components_stop_when_the_owning_process_is_killed() {
    if kube_testbed::skip_requested() {
        return;
    }
    let mut owner = Command::new(env!("CARGO_BIN_EXE_kube-testbed"))
        .args(["up", "--scheduler", "--controller-manager"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut directory = None;
    let mut ready = false;
    for line in BufReader::new(owner.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        println!("{line}");
        if let Some(dir) = line.strip_prefix("kube-testbed: directory ") {
            directory = Some(PathBuf::from(dir));
        }
        if line.starts_with("export KUBECONFIG=") {
            ready = true;
            break;
        }
    }
    if !ready {
        let status = owner.wait().unwrap();
        panic!("`kube-testbed up` did not start a bed ({status}); its error is above");
    }
    let directory = directory.expect("`kube-testbed up` names its directory");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir(directory.join("run")).unwrap() {
        let path = entry.unwrap().path();
        let pid: u32 = std::fs::read_to_string(&path)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        pids.push((
            path.file_stem().unwrap().to_string_lossy().into_owned(),
            pid,
        ));
    }
    pids.sort();
    let names: Vec<&str> = pids.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler"
        ]
    );
    for (name, pid) in &pids {
        assert!(
            kube_testbed::process_alive(*pid),
            "{name} (pid {pid}) is not running"
        );
    }

    owner.kill().unwrap(); // SIGKILL
    owner.wait().unwrap();
    let killed = Instant::now();

    let limit = Duration::from_secs(10);
    loop {
        let alive: Vec<_> = pids
            .iter()
            .filter(|(_, pid)| kube_testbed::process_alive(*pid))
            .collect();
        if alive.is_empty() {
            break;
        }
        assert!(
            killed.elapsed() < limit,
            "still running {limit:?} after their owner was killed: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("all components gone {:?} after SIGKILL", killed.elapsed());
    // The cleaner removes the directory once they are gone.
    while directory.exists() {
        assert!(
            killed.elapsed() < limit + Duration::from_secs(10),
            "{} is still there",
            directory.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

//! One controller's run: a bed of its own, each size in turn.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use jiff::Timestamp;
use kube_testbed::Testbed;
use kube_testbed::deploy::{self, ControllerProcess, Deployed, Pod};

use crate::audit::{self, Reader};
use crate::report::{Convergence, EventReport, SizeReport};
use crate::stats::percentile;
use crate::system::{self, Memory};
use crate::workloads::{
    Target, Workload, backup_queue::BackupQueue, host_label::HostLabel, load_soothe::LoadSoothe,
};
use crate::{Controller, ControllerReport, Options};

/// Measures `controller` as `options` say, on a bed of its own; `progress`
/// gets a line at each step.
pub async fn measure(
    controller: Controller,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<ControllerReport> {
    match controller {
        Controller::BackupQueue => {
            Run::start(BackupQueue::new(options.queued_percent), options, progress)
                .await?
                .all_sizes()
                .await
        }
        Controller::LoadSoothe => {
            Run::start(LoadSoothe::new(options.nodes), options, progress)
                .await?
                .all_sizes()
                .await
        }
        Controller::HostLabel => {
            Run::start(HostLabel::new(), options, progress)
                .await?
                .all_sizes()
                .await
        }
    }
}

/// The build command that makes the controller binaries.
pub const BUILD_COMMAND: &str = "cargo build --release -p backup-queue-controller -p load-soothe-controller -p host-label-controller";

struct Run<'a, W> {
    workload: W,
    options: &'a Options,
    progress: &'a mut dyn FnMut(&str),
    binary: std::path::PathBuf,
    bed: Testbed,
    // Kept alive: holds the audit policy and log.
    _audit_dir: tempfile::TempDir,
    deployed: Deployed,
    user: String,
    audit: Reader,
    starts: usize,
}

/// A started process and when it started.
struct Started {
    process: ControllerProcess,
    at: Timestamp,
}

impl<'a, W: Workload> Run<'a, W> {
    async fn start(
        mut workload: W,
        options: &'a Options,
        progress: &'a mut dyn FnMut(&str),
    ) -> anyhow::Result<Run<'a, W>> {
        let controller = workload.controller();
        let binary = options.bin_dir.join(controller.binary());
        if !binary.is_file() {
            bail!(
                "{} is missing: build the controllers with `{BUILD_COMMAND}` (or give --bin-dir)",
                binary.display()
            );
        }
        let audit_dir = tempfile::tempdir().context("a directory for the audit log")?;
        let (args, log) = deploy::audit_args(audit_dir.path())?;
        progress(&format!("{}: starting a bed", controller.binary()));
        let bed = Testbed::builder()
            .apiserver_args(args)
            .start()
            .await
            .context("the test bed did not start (build it with `bash testbed/build.sh`)")?;
        workload.setup(&bed).await?;
        let manifests = manifests(&binary, &workload.manifest_args())?;
        let deployed = deploy::deploy_manifests(&bed, &manifests, None).await?;
        let (namespace, account) = deployed
            .service_account()
            .context("the manifests have no workload with a ServiceAccount")?;
        let user = format!("system:serviceaccount:{namespace}:{account}");
        let audit = Reader::new(&log, &user);
        Ok(Run {
            workload,
            options,
            progress,
            binary,
            bed,
            _audit_dir: audit_dir,
            deployed,
            user,
            audit,
            starts: 0,
        })
    }

    async fn all_sizes(mut self) -> anyhow::Result<ControllerReport> {
        let controller = self.workload.controller();
        let mut sizes = Vec::new();
        let mut created = 0;
        for size in self.options.sizes(controller) {
            sizes.push(self.size(created, size).await?);
            created = size;
        }
        Ok(ControllerReport {
            controller,
            binary: self.binary.display().to_string(),
            user: self.user.clone(),
            sizes,
        })
    }

    fn say(&mut self, line: &str) {
        let name = self.workload.controller().binary();
        (self.progress)(&format!("{name}: {line}"));
    }

    async fn size(&mut self, from: usize, size: usize) -> anyhow::Result<SizeReport> {
        let objects = self.workload.describe(size);
        self.say(&format!("creating {objects}"));
        let began = Instant::now();
        let pending = self
            .workload
            .populate(from, size, self.options.create_concurrency)
            .await?;
        self.wait("this program's watch to see every object", |w| {
            if w.mirrored() {
                Ok(())
            } else {
                Err("not yet".to_owned())
            }
        })
        .await?;
        let populate_seconds = began.elapsed().as_secs_f64();

        self.say("starting the controller");
        let (first, start) = self.start_and_converge(pending).await?;
        self.say(&format!(
            "converged in {:.1} s (ready in {:.1} s)",
            start.converged_seconds, start.ready_seconds
        ));
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut events = Vec::new();
        // The one-at-a-time events first, so that the paced ones meet the
        // state they leave (for the Backup queue: a queue behind an
        // ordinary running backup, not behind the whole-cluster one).
        let mut kinds: Vec<_> = self
            .workload
            .event_kinds()
            .into_iter()
            .enumerate()
            .collect();
        kinds.sort_by_key(|(_, event)| event.paced);
        for (kind, event) in kinds {
            let count = if event.paced {
                self.options.events
            } else {
                self.options.slow_events
            };
            if count == 0 {
                continue;
            }
            self.say(&format!("{count} events: {}", event.name));
            let report = self
                .events(&first, kind, event.name, event.paced, count)
                .await?;
            events.push(report);
        }
        let memory = system::memory(first.process.pid()).unwrap_or_default();

        self.say("restarting the controller");
        first
            .process
            .terminate(Duration::from_secs(30))
            .await
            .context("the controller did not stop on SIGTERM")?;
        let first_stopped = Timestamp::now();
        let changes = self.options.restart_changes;
        for i in 0..changes {
            self.workload.event(0, i).await?;
        }
        let (second, restart) = self.start_and_converge(changes).await?;
        self.say(&format!(
            "converged after restart in {:.1} s (ready in {:.1} s)",
            restart.converged_seconds, restart.ready_seconds
        ));
        let restart_memory = system::memory(second.process.pid()).unwrap_or_default();
        second
            .process
            .terminate(Duration::from_secs(30))
            .await
            .context("the controller did not stop on SIGTERM")?;
        let second_stopped = Timestamp::now();
        tokio::time::sleep(Duration::from_millis(500)).await;

        let requests = self.audit.update().context("reading the audit log")?;
        let mut relists: BTreeMap<String, usize> = BTreeMap::new();
        let mut watches = 0;
        for (from, to) in [(first.at, first_stopped), (second.at, second_stopped)] {
            let lifetime = audit::between(requests, from, to);
            watches += lifetime.iter().filter(|r| r.verb == "watch").count();
            for (key, count) in audit::relists(&lifetime) {
                *relists.entry(key).or_insert(0) += count;
            }
        }
        Ok(SizeReport {
            size,
            objects,
            populate_seconds,
            start,
            memory: Memory {
                peak_kib: memory.peak_kib,
                now_kib: memory.now_kib,
            },
            events,
            restart,
            restart_memory,
            relists,
            watches,
        })
    }

    /// Polls `check` every 20 ms until it is `Ok`, up to the timeout.
    async fn wait(
        &self,
        what: &str,
        check: impl Fn(&W) -> Result<(), String>,
    ) -> anyhow::Result<()> {
        let began = Instant::now();
        loop {
            match check(&self.workload) {
                Ok(()) => return Ok(()),
                Err(seen) if began.elapsed() > self.options.timeout => {
                    bail!("timed out waiting for {what}: {seen}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// Starts the controller (a new pod name each time, as a Deployment's
    /// new pod has) and waits until it is ready and the objects have
    /// converged.
    async fn start_and_converge(
        &mut self,
        pending: usize,
    ) -> anyhow::Result<(Started, Convergence)> {
        self.starts += 1;
        let name = format!("{}-{}", self.workload.controller().binary(), self.starts);
        let pod = Pod {
            name: &name,
            node: "node-0000",
        };
        let launch = self.deployed.launch(&self.bed, &self.binary, &pod).await?;
        let at = Timestamp::now();
        let began = Instant::now();
        let process = launch.spawn()?;
        let mut ready = None;
        let mut last_probe = Instant::now() - Duration::from_secs(1);
        loop {
            if let Some(status) = process.exited() {
                bail!(
                    "the controller exited ({status}) before converging; its log ends:\n{}",
                    process.log_tail(30)
                );
            }
            if ready.is_none() && last_probe.elapsed() >= Duration::from_millis(100) {
                last_probe = Instant::now();
                if let Ok((200, _)) = process.http_get("/readyz").await {
                    ready = Some(began.elapsed());
                }
            }
            let converged = self.workload.converged();
            if let (Some(_), Ok(())) = (ready, &converged) {
                break;
            }
            if began.elapsed() > self.options.timeout {
                bail!(
                    "the controller did not converge in {:?} (ready: {}; {}); its log ends:\n{}",
                    self.options.timeout,
                    ready.is_some(),
                    converged.err().unwrap_or_default(),
                    process.log_tail(30)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let converged = began.elapsed();
        let last_write = self.quiet(&process, at).await?;
        let writes = audit::between(self.audit.requests(), at, Timestamp::now())
            .iter()
            .filter(|r| is_counted_write(r))
            .count();
        Ok((
            Started { process, at },
            Convergence {
                pending,
                ready_seconds: ready.unwrap_or_default().as_secs_f64(),
                converged_seconds: converged.as_secs_f64(),
                last_write_seconds: seconds_between(at, last_write),
                writes,
                loadavg: system::loadavg(),
            },
        ))
    }

    /// Makes `count` events of `kind` and measures them.
    async fn events(
        &mut self,
        started: &Started,
        kind: usize,
        name: &str,
        paced: bool,
        count: usize,
    ) -> anyhow::Result<EventReport> {
        let from = Timestamp::now();
        let began = Instant::now();
        let rate = self.options.event_rate.max(0.001);
        // (target, sent, answered)
        let mut sent: Vec<(Target, Timestamp, Timestamp)> = Vec::new();
        for i in 0..count {
            if paced {
                let due = Duration::from_secs_f64(i as f64 / rate);
                if let Some(wait) = due.checked_sub(began.elapsed()) {
                    tokio::time::sleep(wait).await;
                }
            }
            let before = Timestamp::now();
            let Some(target) = self.workload.event(kind, i).await? else {
                continue;
            };
            sent.push((target, before, Timestamp::now()));
            if !paced {
                self.settle(started, &sent).await?;
            }
        }
        self.settle(started, &sent).await?;
        let last_write = self.quiet(&started.process, from).await?;
        let settled_seconds = seconds_between(from, last_write);
        let to = Timestamp::now();
        let requests = self.audit.requests();
        let latencies: Vec<f64> = sent
            .iter()
            .filter_map(|(target, before, answered)| {
                let write =
                    audit::first_write_after(requests, target.resource, &target.name, *before)?;
                let ms = (write.answered - *answered)
                    .total(jiff::Unit::Millisecond)
                    .ok()?;
                Some(ms.max(0.0))
            })
            .collect();
        let window = audit::between(requests, from, to);
        let events = sent.len().max(1) as f64;
        let requests_per_event = audit::by_verb(&window)
            .into_iter()
            .map(|(key, n)| (key, n as f64 / events))
            .collect();
        Ok(EventReport {
            kind: name.to_owned(),
            count: sent.len(),
            rate: if paced { rate } else { 0.0 },
            matched: latencies.len(),
            p50_ms: percentile(&latencies, 50.0),
            p99_ms: percentile(&latencies, 99.0),
            max_ms: percentile(&latencies, 100.0),
            settled_seconds,
            requests_per_event,
            loadavg: system::loadavg(),
        })
    }

    /// Waits until the controller has made no write (but Lease renewals)
    /// for [`QUIET`]: its Events and annotations trail behind the state
    /// that [`Workload::converged`] checks. Returns when it made its last
    /// write since `since` (`since` if none).
    async fn quiet(
        &mut self,
        process: &ControllerProcess,
        since: Timestamp,
    ) -> anyhow::Result<Timestamp> {
        let began = Instant::now();
        loop {
            let last = self
                .audit
                .update()
                .context("reading the audit log")?
                .iter()
                .rev()
                .take_while(|r| r.received >= since)
                .filter(|r| is_counted_write(r))
                .map(|r| r.answered)
                .max()
                .unwrap_or(since);
            let idle = (Timestamp::now() - last)
                .total(jiff::Unit::Millisecond)
                .unwrap_or(0.0);
            if idle >= QUIET.as_secs_f64() * 1000.0 {
                return Ok(last);
            }
            if let Some(status) = process.exited() {
                bail!(
                    "the controller exited ({status}); its log ends:\n{}",
                    process.log_tail(30)
                );
            }
            if began.elapsed() > self.options.timeout {
                bail!("the controller kept writing for {:?}", self.options.timeout);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until every target is handled and the objects have converged.
    async fn settle(
        &self,
        started: &Started,
        sent: &[(Target, Timestamp, Timestamp)],
    ) -> anyhow::Result<()> {
        let began = Instant::now();
        loop {
            if let Some(status) = started.process.exited() {
                bail!(
                    "the controller exited ({status}); its log ends:\n{}",
                    started.process.log_tail(30)
                );
            }
            let unhandled = sent
                .iter()
                .filter(|(target, _, _)| !self.workload.handled(target))
                .count();
            let converged = self.workload.converged();
            if unhandled == 0 && converged.is_ok() {
                return Ok(());
            }
            if began.elapsed() > self.options.timeout {
                bail!(
                    "timed out: {unhandled} events not acted on ({}); the controller's log ends:\n{}",
                    converged.err().unwrap_or_default(),
                    started.process.log_tail(30)
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// How long the controller must make no write to count as settled.
const QUIET: Duration = Duration::from_secs(2);

/// A write that counts: anything but a Lease renewal.
fn is_counted_write(request: &audit::Request) -> bool {
    request.is_write() && request.resource != "leases"
}

fn seconds_between(from: Timestamp, to: Timestamp) -> f64 {
    (to - from)
        .total(jiff::Unit::Second)
        .unwrap_or(0.0)
        .max(0.0)
}

/// `<binary> manifests <args>`: the controller's generated manifests.
fn manifests(binary: &Path, args: &[String]) -> anyhow::Result<String> {
    let output = std::process::Command::new(binary)
        .arg("manifests")
        .args(args)
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    if !output.status.success() {
        bail!(
            "{} manifests failed ({}): {}",
            binary.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8(output.stdout).context("the manifests are not UTF-8")
}

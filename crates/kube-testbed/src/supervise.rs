//! Running a component so that it never outlives the process that
//! started it.
//!
//! The workspace forbids `unsafe`, so there is no `prctl(PR_SET_PDEATHSIG)`
//! in a `pre_exec` hook. Instead each program runs under a small `bash`
//! supervisor whose standard input is a pipe that only this process holds
//! open (std creates its pipes close-on-exec, so no other child inherits
//! the write end). The supervisor starts the program in its own process
//! group and waits; a watcher beside it blocks reading the pipe. The read
//! returns when this process closes the pipe (a clean stop) or when the
//! kernel closes it (this process exited or was killed, even by SIGKILL),
//! and the watcher then sends SIGTERM to the program's process group, and
//! SIGKILL after a grace period.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::Component;
use crate::error::Error;

/// How long a program has between SIGTERM and SIGKILL. A bed's data is
/// thrown away, so this only leaves room for a clean exit: kube-apiserver
/// takes about 2 s while etcd runs, and hangs if etcd stops at the same
/// time (as when the owning process is killed and every supervisor stops
/// its program at once).
pub(crate) const GRACE: Duration = Duration::from_secs(5);

/// How long the supervisor of `component` waits, once the owning process
/// is gone, before it stops the program: etcd outlives kube-apiserver.
fn orphan_delay(component: Component) -> Duration {
    match component {
        Component::Etcd => Duration::from_secs(3),
        _ => Duration::ZERO,
    }
}

/// The supervisor. `$1` is the pid file, `$2` the grace period in seconds,
/// `$3` how long to wait before stopping the program when the owning
/// process is gone (the pipe closed without a `stop` line), the rest the
/// program and its arguments. It prints the program's pid on
/// standard output, then its own messages go to standard error (the log).
///
/// - `set -m` puts each background job in its own process group, so a
///   terminal's Ctrl-C (sent to the foreground group: this process and the
///   supervisors) never reaches the program, and the watcher can signal the
///   program together with any children it has (Velero's plugins).
/// - INT, HUP, QUIT and TERM only interrupt `wait` (a terminal's Ctrl-C, or
///   `timeout` signalling its whole process group, reach the supervisors
///   too); the supervisor stays until its program has exited. Only SIGKILL
///   ends it early, so the bed also watches the program's pid.
/// - The watcher reads the pipe through fd 3; the program gets
///   `/dev/null` as standard input, the log as standard output and error
///   (the supervisor's own standard output is the pipe that reports the
///   pid, closed once read), and no fd 3.
const SUPERVISOR: &str = r#"set -m
trap ':' INT HUP QUIT TERM
pid_file=$1 grace=$2 orphan_delay=$3
shift 3
exec 3<&0 0</dev/null
"$@" 3<&- 1>&2 &
child=$!
echo "$child" > "$pid_file"
echo "$child"
exec 1>&2
echo "kube-testbed: started (pid $child): $*"
{
    read -r _ <&3 || sleep "$orphan_delay"
    kill -TERM -- "-$child" 2>/dev/null
    sleep "$grace"
    kill -KILL -- "-$child" 2>/dev/null
} &
watcher=$!
exec 3<&-
wait "$child"; status=$?
while kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done
kill -- "-$watcher" 2>/dev/null
echo "kube-testbed: pid $child exited with status $status"
exit "$status"
"#;

/// A program running under its supervisor.
#[derive(Debug)]
pub(crate) struct Supervised {
    component: Component,
    supervisor: Child,
    lifeline: Option<ChildStdin>,
    pid: u32,
    log: PathBuf,
}

impl Supervised {
    /// Starts `program args...` under a supervisor; its output is appended
    /// to `log`, its pid written to `pid_file`. When the owning process is
    /// gone, the program is stopped after `orphan_delay` (etcd waits for
    /// kube-apiserver, which hangs on exit while etcd stops).
    pub(crate) fn spawn(
        component: Component,
        program: &Path,
        args: &[String],
        log: &Path,
        pid_file: &Path,
    ) -> Result<Supervised, Error> {
        let spawn_error = |detail: String| Error::Spawn { component, detail };
        let log_file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| spawn_error(format!("cannot open {}: {e}", log.display())))?;
        let mut command = Command::new("bash");
        command
            .arg("-c")
            .arg(SUPERVISOR)
            .arg(format!("kube-testbed:{component}"))
            .arg(pid_file)
            .arg(GRACE.as_secs().to_string())
            .arg(orphan_delay(component).as_secs().to_string())
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log_file));
        let mut supervisor = command
            .spawn()
            .map_err(|e| spawn_error(format!("cannot run bash (the supervisor): {e}")))?;
        let lifeline = supervisor.stdin.take();
        let mut line = String::new();
        if let Some(stdout) = supervisor.stdout.take() {
            BufReader::new(stdout)
                .read_line(&mut line)
                .map_err(|e| spawn_error(format!("no pid from the supervisor: {e}")))?;
        }
        let pid = match line.trim().parse::<u32>() {
            Ok(pid) => pid,
            Err(_) => {
                drop(lifeline);
                let status = supervisor.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(spawn_error(format!(
                    "the supervisor printed {line:?} instead of a pid ({status}); see {}",
                    log.display()
                )));
            }
        };
        Ok(Supervised {
            component,
            supervisor,
            lifeline,
            pid,
            log: log.to_owned(),
        })
    }

    /// The component it runs.
    pub(crate) fn component(&self) -> Component {
        self.component
    }

    /// The program's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The program's log file.
    pub(crate) fn log(&self) -> &Path {
        &self.log
    }

    /// How the program exited, if it has (as its supervisor reports it).
    pub(crate) fn exited(&mut self) -> Option<ExitStatus> {
        self.supervisor.try_wait().ok().flatten()
    }

    /// Whether both the supervisor and the program are gone.
    fn gone(&mut self) -> bool {
        self.exited().is_some() && !process_alive(self.pid)
    }

    /// The error for a program that exited while it was awaited.
    pub(crate) fn exited_error(&self, status: ExitStatus) -> Error {
        Error::Exited {
            component: self.component,
            status: status.to_string(),
            log: self.log.clone(),
            log_tail: log_tail(&self.log),
        }
    }

    /// Asks the program to stop (SIGTERM to its process group) without
    /// waiting: a `stop` line, then the pipe closes.
    pub(crate) fn request_stop(&mut self) {
        if let Some(mut lifeline) = self.lifeline.take() {
            let _ = lifeline.write_all(b"stop\n");
        }
    }

    /// Stops the program and waits until it is gone.
    pub(crate) async fn stop(&mut self) {
        self.request_stop();
        let deadline = Instant::now() + GRACE + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.gone() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.kill_now();
    }

    /// Stops the program and waits until it is gone, blocking the thread.
    pub(crate) fn stop_blocking(&mut self) {
        self.request_stop();
        let deadline = Instant::now() + GRACE + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.gone() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill_now();
    }

    /// SIGKILL for the program's process group and the supervisor.
    fn kill_now(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.pid)])
            .stderr(Stdio::null())
            .status();
        let _ = self.supervisor.kill();
        let _ = self.supervisor.wait();
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if !self.gone() {
            self.stop_blocking();
        }
    }
}

/// The last lines of a log file (at most 8 KiB), for error messages.
pub(crate) fn log_tail(path: &Path) -> String {
    const MAX: u64 = 8 * 1024;
    const LINES: usize = 40;
    let Ok(mut file) = File::open(path) else {
        return format!("(no log at {})", path.display());
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(MAX);
    if file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let skip = lines.len().saturating_sub(LINES);
    let mut tail = lines[skip..].join("\n");
    if tail.is_empty() {
        tail = "(the log is empty)".to_owned();
    }
    tail
}

/// Whether process `pid` still exists (and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and
        // may itself contain spaces or parentheses.
        Ok(stat) => match stat.rfind(')') {
            Some(end) => !matches!(stat[end + 1..].trim_start().chars().next(), Some('Z' | 'X')),
            None => true,
        },
        Err(_) => false,
    }
}

/// A process that removes the bed's directory once this process is gone
/// and the components have exited, for beds that are never dropped (a
/// `static`, or a process that is killed). A bed that is dropped removes
/// its directory itself first; the cleaner then finds nothing to do.
#[derive(Debug)]
pub(crate) struct Cleaner {
    child: Child,
}

const CLEANER: &str = r#"dir=$1
# A process is gone once it has no /proc entry or is a zombie (its parent,
# the supervisor, may be gone too, and init may reap it late).
alive() {
    case "$(sed -n 's/.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)" in
        '' | Z | X) return 1 ;;
    esac
}
read -r _
for pid_file in "$dir"/run/*.pid; do
    [ -f "$pid_file" ] || continue
    pid=$(cat "$pid_file" 2>/dev/null) || continue
    waited=0
    while [ -n "$pid" ] && alive "$pid" && [ "$waited" -lt 300 ]; do
        sleep 0.1; waited=$((waited + 1))
    done
done
rm -rf -- "$dir"
"#;

impl Cleaner {
    pub(crate) fn spawn(dir: &Path) -> Result<Cleaner, Error> {
        let child = Command::new("bash")
            .arg("-c")
            .arg(CLEANER)
            .arg("kube-testbed:cleaner")
            .arg(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::io("cannot run bash (the bed's cleaner)", e))?;
        Ok(Cleaner { child })
    }
}

impl Drop for Cleaner {
    fn drop(&mut self) {
        // Closing its input lets it run now; it finds the directory
        // already removed by the bed's own drop.
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = stdin.flush();
        }
        let _ = self.child.wait();
    }
}

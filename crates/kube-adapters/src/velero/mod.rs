//! Velero kinds to policy inputs: Backups to the backup queue's
//! [`BackupInput`](backup_queue::BackupInput), the four load kinds to the
//! prepare-queue gate's [`Load`](load_soothe::Load).

mod backup;
mod loads;

pub use backup::{backup_input, queue_position};
pub use loads::{GateScope, LoadObject, expose_on_going, load, object_reference};

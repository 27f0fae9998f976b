//! Label keys Velero puts on its objects that the policies read.

/// Set to `"true"` on a DataUpload, DataDownload, PodVolumeBackup or
/// PodVolumeRestore while it is being prepared (L3.11): added with the
/// move to `Accepted`, removed with the move to `InProgress` or a terminal
/// phase. The prepare-queue counts loads by this label.
pub const EXPOSE_ON_GOING: &str = "velero.io/expose-on-going";

/// Name of the Backup a DataUpload or PodVolumeBackup belongs to.
pub const BACKUP_NAME: &str = "velero.io/backup-name";

/// Name of the Restore a DataDownload or PodVolumeRestore belongs to.
pub const RESTORE_NAME: &str = "velero.io/restore-name";

/// Label of data-mover pods; `snapshot-exposer` for backups and
/// `generic-restore-exposer` for restores (A2.17b).
pub const EXPOSER_POD_GROUP: &str = "velero.io/exposer-pod-group";

//! Virtual machines over physical hosts (spec §A).

//! Node labels naming the physical host, and their audit (spec §B).

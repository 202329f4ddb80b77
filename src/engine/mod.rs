//! The engagement engine: cadences, replies and calls run for leads (more arrives on merge).

pub mod assistant;

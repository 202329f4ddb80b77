//! Contact: whether and how a lead may be reached, read and never written. The
//! compliance checks every outbound attempt passes, the organization's quiet hours, the
//! opt-out and opt-in keywords, and how a reply reads as a revocation of consent.
//!
//! Architecture Invariant: nothing here writes or reacts. Contact imports nothing above
//! records, settings and people; the flows that act on what it decides live in
//! `conversation` (a message in, a person's action, a possible opt-out) and
//! `engagement` (the gate's writes, the cadence).

pub mod compliance;
pub mod keywords;
pub mod quiet_hours;
pub mod revocation;

//! Voice: calls engaged places and answers through a voice provider, transfers to a
//! human (cold, `transfer`; warm, `warm`), and the call's transcript.

pub mod screening;
pub mod transcript;
pub mod transfer;
#[allow(clippy::module_inception)]
pub mod voice;
pub mod warm;

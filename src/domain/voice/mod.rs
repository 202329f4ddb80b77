//! Voice: calls engaged places and answers through a voice provider, transfers to a
//! human, and the call's transcript.

pub mod screening;
pub mod transcript;
pub mod transfer;
#[allow(clippy::module_inception)]
pub mod voice;

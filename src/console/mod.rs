//! The operator console: server-rendered pages under `/console/` for the people who own
//! the conversations (`../shared/spec/console.md`).
//!
//! It sits on the api floor beside `api/`: its handlers check the session and the CSRF
//! token, call the same domain functions the API calls, and render HTML.

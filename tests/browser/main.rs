//! The console in a real browser: headless Chromium through WebDriver (the test kit's
//! `Browser`), against the real server on an ephemeral port. Each test uses the
//! console as a person does, finding fields by their labels and buttons and links by
//! their words (`../shared/spec/console.md` quotes them).

mod api_text;
mod campaigns;
mod consent;
mod conversation;
mod enrol;
mod export;
mod first_hour;
mod first_run;
mod import;
mod import_choices;
mod inbox;
mod layout;
mod lead;
mod lead_fields;
mod leads;
mod meetings;
mod profile_editor;
mod replays;
mod screenshots;
mod settings;
mod sign_in;
mod webchat;

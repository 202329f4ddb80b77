//! The first run's checklist, shown on the inbox while it holds no conversation: each
//! step of setting up with its state ("Done" or "To do") — an assistant, providers, a
//! calendar, leads (an import), a campaign, a first reply — with a link for those who
//! may take it (admins for Settings and campaigns, agents for leads) and words for
//! others.

use maud::{html, Markup};

use super::session::Visitor;
use crate::error::Result;
use crate::store::facet::Facet;
use crate::store::rows::{ProviderSettings, Role};
use crate::store::{ReadTx, Reader};

/// One step: its words, whether it is done, where it is taken, who may take it, and
/// the words for those who may not.
struct Step {
    words: &'static str,
    done: bool,
    link: (&'static str, &'static str),
    role: Role,
    others: &'static str,
}

/// The checklist of `visitor`'s organization, read from `read`; `conversations`: how
/// many the inbox holds.
pub fn render(read: &ReadTx, visitor: &Visitor, conversations: u64) -> Result<Markup> {
    let org = visitor.org();
    let settings = read.engine_settings(org)?;
    let real = |p: &ProviderSettings| !matches!(p, ProviderSettings::Sandbox { .. });
    let leads = read.lead_index(org)?.count(&Facet::All)?;
    let steps = [
        Step {
            words: "Connect an assistant, so that replies are answered",
            done: settings.assistant.is_some(),
            link: ("/console/settings/assistant", "Settings → Assistant"),
            role: Role::Admin,
            others: "an admin connects it",
        },
        Step {
            words: "Connect a text or email provider, so that messages reach leads",
            done: real(&settings.sms) || real(&settings.email),
            link: ("/console/settings/providers", "Settings → Providers"),
            role: Role::Admin,
            others: "an admin connects one",
        },
        Step {
            words: "Add a calendar, so that meetings can be booked",
            done: !read.calendars(org)?.is_empty(),
            link: ("/console/settings/calendars", "Settings → Calendars"),
            role: Role::Admin,
            others: "an admin adds one",
        },
        Step {
            words: "Import your leads",
            done: leads > 0,
            link: ("/console/import", "Import leads"),
            role: Role::Agent,
            others: "an agent or admin imports them",
        },
        Step {
            words: "Create a campaign",
            done: !read.profile_names(org)?.is_empty(),
            link: ("/console/campaigns/new", "New campaign"),
            role: Role::Admin,
            others: "an admin creates one",
        },
        Step {
            words: "Answer a first reply",
            done: conversations > 0,
            link: ("/console/leads", "Leads"),
            role: Role::Agent,
            others: "replies appear here",
        },
    ];
    let role = visitor.user.role;
    Ok(html! {
        section.panel.checklist aria-labelledby="first-steps" {
            h2 #first-steps { "First steps" }
            ol {
                @for step in &steps {
                    li {
                        span.badge.state { @if step.done { "Done" } @else { "To do" } }
                        " " (step.words)
                        @if !step.done {
                            ": "
                            @if role.at_least(step.role) { a href=(step.link.0) { (step.link.1) } } @else { (step.others) }
                        }
                    }
                }
            }
        }
    })
}

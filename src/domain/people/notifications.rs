//! Email notifications about leads that need a person: who gets them and what they
//! say. The notifier (`engine::notices`) sends them; the queue they come from is kept in
//! the commit that made the lead need attention (`store::notices`).

use crate::attention::Attention;
use crate::error::Result;
use crate::store::rows::{LeadRecord, Role, UserRecord};
use crate::store::ReadTx;

/// The people of `org` who get an email when a lead needs attention: agents and admins,
/// not disabled, who turned notifications on.
pub fn recipients(read: &ReadTx, org: &str) -> Result<Vec<UserRecord>> {
    Ok(super::users::list(read, Some(org))?
        .into_iter()
        .filter(|u| u.notify && u.disabled_at.is_none() && u.role.at_least(Role::Agent))
        .collect())
}

/// The subject and text of the email about `lead`, needing attention for `reasons`,
/// whose page is at `link`, cleaned as every text that leaves.
pub fn compose(lead: &LeadRecord, reasons: &[Attention], link: &str) -> (String, String) {
    let name = lead.display_name();
    let words: Vec<&str> = reasons.iter().map(|r| r.words()).collect();
    let subject = format!("Needs attention: {name}");
    let text = format!(
        "{name} needs a person: {}.\n\nOpen the conversation: {link}\n\n\
         You get this email because you turned on email notifications in the console \
         (Notifications). At most one email per lead per hour.\n",
        words.join(", ")
    );
    // A name stored before the character rule leaves clean.
    (
        crate::carrier_text::line(&subject),
        crate::carrier_text::clean(&text),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_email_names_the_lead_its_reasons_and_links_its_page() {
        let lead = LeadRecord {
            id: "l-1".into(),
            first_name: "Ana".into(),
            last_name: "Ruiz".into(),
            ..LeadRecord::default()
        };
        let (subject, text) = compose(
            &lead,
            &[Attention::HandedOff, Attention::Waiting],
            "https://crm.example/console/leads/l-1",
        );
        assert_eq!(subject, "Needs attention: Ana Ruiz");
        assert!(text.starts_with("Ana Ruiz needs a person: Handed off, Waiting for a reply."));
        assert!(text.contains("https://crm.example/console/leads/l-1"));
    }
}

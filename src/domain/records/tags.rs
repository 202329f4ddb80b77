//! Tags made from a name alone: the tag-id rule ([`tag_id`]) that the console's "Add
//! tag", the assistant's `add_tag` tool and the import's tag column share, and the tag
//! a name gives ([`named`]), checked as a tag of a lead write is.

use crate::domain::records::limits;
use crate::error::{Error, Result};
use crate::store::rows::TagRecord;

/// A tag's id from its name: the lower-case words joined by `-`, anything but letters
/// and digits separating words ("Solar Panels!" → "solar-panels"). Empty when the name
/// has no letter or digit: such a name makes no tag.
pub fn tag_id(name: &str) -> String {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join("-")
}

/// The tag `name` gives (its id [`tag_id`], no condition). Refused as a lead's `tags`
/// are: `Invalid format for field: tags` when the name has no letter or digit (no
/// id), else `limits::tag`'s refusal.
pub fn named(name: &str) -> Result<TagRecord> {
    let id = tag_id(name);
    if id.is_empty() {
        return Err(Error::invalid_field("tags"));
    }
    let tag = TagRecord {
        id,
        name: name.to_string(),
        condition: String::new(),
    };
    limits::tag(&tag)?;
    Ok(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_ids_are_lower_case_words_joined_by_dashes() {
        assert_eq!(tag_id("Solar Panels"), "solar-panels");
        assert_eq!(tag_id("  Solar   Panels!! "), "solar-panels");
        assert_eq!(tag_id("roof/repair, urgent"), "roof-repair-urgent");
        assert_eq!(tag_id("EV_charger-2"), "ev-charger-2");
        assert_eq!(tag_id("Café Owners"), "café-owners");
        assert_eq!(tag_id("hot"), "hot");
        assert_eq!(tag_id(""), "");
        assert_eq!(tag_id(" -!- "), "");
    }

    #[test]
    fn a_name_gives_its_tag_or_the_refusal_of_a_lead_write() {
        let tag = named("Solar Panels").unwrap();
        assert_eq!(
            (tag.id.as_str(), tag.name.as_str()),
            ("solar-panels", "Solar Panels")
        );
        assert!(tag.condition.is_empty());
        // The same refusal `leads::tags` gives a tag without an id.
        let no_id = named(" -!- ").unwrap_err();
        assert_eq!(no_id.to_string(), "Invalid format for field: tags");
        assert_eq!(
            no_id.to_string(),
            crate::domain::records::leads::tags(&serde_json::json!([{"id": "", "name": "x"}]))
                .unwrap_err()
                .to_string()
        );
        let long = "a".repeat(10_000);
        assert!(named(&long).unwrap_err().is_bad_request());
    }
}

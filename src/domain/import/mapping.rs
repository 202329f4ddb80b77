//! Which lead field each column of an import feeds: names compared with case and
//! punctuation ignored (`firstName`, `First Name`, `first_name`), with the common
//! synonyms (`mobile` for the phone, `profile` for `customerProfile`); any other column
//! goes to `additionalInfo` under its own name. The `consent...` columns feed the
//! lead's consent ledger. The console lets a person change the guess before importing.

/// A lead field an import column can feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    FirstName,
    LastName,
    /// "Name": the first word to `firstName`, the rest to `lastName`.
    FullName,
    Phone,
    Email,
    Profile,
    ExternalLeadId,
    SecondaryCrmLeadId,
    Summary,
    TimeZone,
    /// Separated by `;`.
    Tags,
    /// `yes`/`true`/`granted` or `no`/`false`/`revoked`: a consent ledger entry per channel.
    Consent,
    /// The channels the consent is for, separated by `;` (default: every one the lead
    /// can receive).
    ConsentChannels,
    /// When it was given (RFC 3339).
    ConsentAt,
    /// The ledger's source (default `import`).
    ConsentSource,
    ConsentText,
    ConsentUrl,
    ConsentIp,
    /// Into `additionalInfo`, under this name.
    Info(String),
    /// Left out.
    Skip,
}

/// The fields a person can pick in the console, with their wire names.
pub const CHOICES: [(&str, Field); 19] = [
    ("firstName", Field::FirstName),
    ("lastName", Field::LastName),
    ("name", Field::FullName),
    ("phone", Field::Phone),
    ("email", Field::Email),
    ("customerProfile", Field::Profile),
    ("externalLeadId", Field::ExternalLeadId),
    ("secondaryCrmLeadId", Field::SecondaryCrmLeadId),
    ("summary", Field::Summary),
    ("timeZone", Field::TimeZone),
    ("tags", Field::Tags),
    ("consent", Field::Consent),
    ("consentChannels", Field::ConsentChannels),
    ("consentAt", Field::ConsentAt),
    ("consentSource", Field::ConsentSource),
    ("consentText", Field::ConsentText),
    ("consentUrl", Field::ConsentUrl),
    ("consentIp", Field::ConsentIp),
    ("skip", Field::Skip),
];

impl Field {
    /// The field a column named `header` feeds.
    pub fn guess(header: &str) -> Field {
        let key: String = header
            .chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect();
        match key.as_str() {
            "firstname" | "first" | "givenname" | "fname" => Field::FirstName,
            "lastname" | "last" | "surname" | "familyname" | "lname" => Field::LastName,
            "name" | "fullname" | "contactname" => Field::FullName,
            "phone" | "phonenumber" | "mobile" | "mobilephone" | "mobilenumber" | "cell"
            | "cellphone" | "tel" | "telephone" => Field::Phone,
            "email" | "emailaddress" | "mail" => Field::Email,
            "customerprofile" | "profile" | "campaign" => Field::Profile,
            "externalleadid" | "externalid" => Field::ExternalLeadId,
            "secondarycrmleadid" => Field::SecondaryCrmLeadId,
            "summary" => Field::Summary,
            "timezone" => Field::TimeZone,
            "tags" | "tag" => Field::Tags,
            "consent" => Field::Consent,
            "consentchannels" | "consentchannel" => Field::ConsentChannels,
            "consentat" | "consentdate" | "consenttime" => Field::ConsentAt,
            "consentsource" => Field::ConsentSource,
            "consenttext" => Field::ConsentText,
            "consenturl" => Field::ConsentUrl,
            "consentip" => Field::ConsentIp,
            "" => Field::Skip,
            _ => Field::Info(header.trim().to_string()),
        }
    }

    /// The field a console choice names (`info` keeps the column under its name).
    pub fn chosen(choice: &str, header: &str) -> Option<Field> {
        if choice == "info" {
            return Some(Field::Info(header.trim().to_string()));
        }
        CHOICES
            .iter()
            .find(|(name, _)| *name == choice)
            .map(|(_, f)| f.clone())
    }

    /// The choice's wire name (`info` for additional information).
    pub fn choice(&self) -> &'static str {
        match self {
            Field::Info(_) => "info",
            other => CHOICES
                .iter()
                .find(|(_, f)| f == other)
                .map_or("skip", |(name, _)| name),
        }
    }
}

/// The field of every column, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub headers: Vec<String>,
    pub fields: Vec<Field>,
}

impl Mapping {
    /// The guessed mapping of a header row.
    pub fn guess(headers: Vec<String>) -> Mapping {
        let fields = headers.iter().map(|h| Field::guess(h)).collect();
        Mapping { headers, fields }
    }

    /// The field of column `i` (a column beyond the header's: left out).
    pub fn field(&self, i: usize) -> &Field {
        self.fields.get(i).unwrap_or(&Field::Skip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_map_by_name_whatever_their_case_and_punctuation() {
        for (header, want) in [
            ("firstName", Field::FirstName),
            ("First Name", Field::FirstName),
            ("first_name", Field::FirstName),
            ("Phone Number", Field::Phone),
            ("mobile", Field::Phone),
            ("E-mail", Field::Email),
            ("profile", Field::Profile),
            ("customerProfile", Field::Profile),
            ("External Lead ID", Field::ExternalLeadId),
            ("Tags", Field::Tags),
            ("consent", Field::Consent),
            ("Consent Channels", Field::ConsentChannels),
            ("consent_at", Field::ConsentAt),
            ("consentSource", Field::ConsentSource),
            ("Consent text", Field::ConsentText),
            ("consentUrl", Field::ConsentUrl),
            ("Consent IP", Field::ConsentIp),
            ("Roof type", Field::Info("Roof type".into())),
        ] {
            assert_eq!(Field::guess(header), want, "{header}");
        }
    }

    #[test]
    fn a_choice_round_trips() {
        for (name, field) in CHOICES {
            assert_eq!(field.choice(), name);
            assert_eq!(Field::chosen(name, "x"), Some(field));
        }
        assert_eq!(
            Field::chosen("info", " Roof "),
            Some(Field::Info("Roof".into()))
        );
        assert_eq!(Field::chosen("nonsense", "x"), None);
    }
}

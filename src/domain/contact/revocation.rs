//! Reading a lead's words for a revocation of consent "by any reasonable means"
//! (`shared/spec/consent.md`): a definite opt-out (acted on at once, of the channels it
//! names or, naming none, as `revocationScope` has it), a possible one (the lead is held
//! for a person to decide) or nothing.
//!
//! The text is folded first (`words::fold`: NFKC, confusable letters of other scripts to
//! their UTS #39 skeleton, combining marks and zero-width characters gone, lower case),
//! cut into words at everything that is not a letter or a digit (apostrophes dropped:
//! `don't` is `dont`), letters spelled out one by one joined (`S T O P`, `S.T.O.P`) and a
//! word that is a per-se word but for leetspeak digits, repeated letters or one typing
//! slip read as it (`st0p`, `stoppp`, `unsubcribe`). The words are then read clause by
//! clause: a clause ends at `.`, `!`, `?`, `;`, `,`, a line break, or before `but`,
//! `and`, `just`, `instead` (so `Don't call me, text me` is two clauses, and `Who is
//! this? Stop` ends with a clause of its own).
//!
//! A clause is a **definite** opt-out when it is
//! - per-se words with only polite or emphatic filler around them (`Stop please`,
//!   `STOP!!!`, `Please unsubscribe me`, `I want to opt out`, `Alto`, `Arrêt`); the
//!   per-se words are CTIA's and the FCC's (`stop`, `stop all`, `quit`, `end`, `revoke`,
//!   `opt out`, `cancel`, `unsubscribe`, `unsub`), their Spanish and French equivalents
//!   (`alto`, `parar`, `cancelar`, `baja`, `arrêt`, `désabonner` ...) and the
//!   organization's own `optOutKeywords`;
//! - a removal anywhere in it whose object is the lead on a list (`remove me from your
//!   list`, `remove my number`, `opt me out`, `lose my number`; not `take me off the
//!   grid`, `remove me from the 9am slot`);
//! - a refusal of contact anywhere in it with nothing after it but its object and
//!   filler (`don't call me`, `stop texting me`, `no more texts`, `don't message me`,
//!   `leave me alone`, `wrong number`, `no más mensajes`; not `don't call before 5pm`).
//!   A refusal that names channels (`call` is voice, `text` SMS, `email` email) revokes
//!   those alone: `Don't call me, text me` revokes voice. `no`, `never` and `go away`
//!   count only opening a clause, and a refusal after a subject is a statement (`I got
//!   no texts`, `you never call me back`, `I don't text`).
//!
//! A refusal asked as a question (`Wrong number?`) is possible, unless it is asked as
//! a request (`Can you remove me from your list?`, definite) or the next clause denies it
//! (`Wrong number? No, this is Ana, go ahead`: nothing). A clause is **possible** when
//! an English per-se word (or one of the organization's own) is used in it as a verb
//! (`can we end this`; not `at the end of the day`, `stop by`, `don't stop`, `cancel my
//! appointment`). The message reads as its strongest clause.
//!
//! A reply that asks to cancel a meeting (`C`, `cancel`, `cancel my appointment`) is read
//! apart ([`cancels_meeting`]): `conversation::inbound` cancels the meeting instead when the
//! message it answers was that meeting's confirmation or reminder. An email is read
//! without what it quotes ([`own_text`]).

use std::sync::LazyLock;

use crate::channel::Channel;
use crate::words::fold;

pub use crate::words::normalize;

/// What a message says about the lead's consent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Nothing: the message is not about stopping.
    Nothing,
    /// A per-se word inside a longer message: a person decides.
    Possible,
    /// An opt-out, acted on at once: of the channels it names, or naming none, of the
    /// channel it came on (widened by `revocationScope`).
    Definite(Named),
}

impl Reading {
    pub fn is_definite(self) -> bool {
        matches!(self, Reading::Definite(_))
    }

    /// The stronger of two readings: a definite one over a possible one over nothing;
    /// two definite ones name the channels of both (naming none wins: it is wider).
    pub fn or(self, other: Reading) -> Reading {
        match (self, other) {
            (Reading::Definite(a), Reading::Definite(b)) => Reading::Definite(a.and(b)),
            (Reading::Definite(a), _) | (_, Reading::Definite(a)) => Reading::Definite(a),
            (Reading::Possible, _) | (_, Reading::Possible) => Reading::Possible,
            _ => Reading::Nothing,
        }
    }
}

/// The channels a definite opt-out names: `Don't call me` names calls, `no more texts`
/// texts; `Stop` and `Remove me from your list` name none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Named {
    calls: bool,
    texts: bool,
    emails: bool,
}

impl Named {
    /// No channel named: the revocation is of the channel it came on, as
    /// `revocationScope` widens it.
    pub const NONE: Named = Named {
        calls: false,
        texts: false,
        emails: false,
    };
    pub const CALLS: Named = Named {
        calls: true,
        texts: false,
        emails: false,
    };
    pub const TEXTS: Named = Named {
        calls: false,
        texts: true,
        emails: false,
    };
    pub const EMAILS: Named = Named {
        calls: false,
        texts: false,
        emails: true,
    };

    pub fn is_none(self) -> bool {
        self == Named::NONE
    }

    /// Both: naming none (every channel) is wider than naming some.
    fn and(self, other: Named) -> Named {
        if self.is_none() || other.is_none() {
            return Named::NONE;
        }
        self.with(other)
    }

    /// The channels of both, as named.
    fn with(self, other: Named) -> Named {
        Named {
            calls: self.calls || other.calls,
            texts: self.texts || other.texts,
            emails: self.emails || other.emails,
        }
    }

    /// The channels named (empty when none is).
    pub fn channels(self) -> Vec<Channel> {
        let mut out = Vec::new();
        if self.texts {
            out.push(Channel::Sms);
        }
        if self.calls {
            out.push(Channel::Voice);
        }
        if self.emails {
            out.push(Channel::Email);
        }
        out
    }

    /// Whether `channel` is one of those named.
    pub fn names(self, channel: Channel) -> bool {
        match channel {
            Channel::Sms => self.texts,
            Channel::Voice => self.calls,
            Channel::Email => self.emails,
        }
    }
}

/// A per-se word or phrase: a revocation by itself (with filler). `inside`: used as a
/// verb inside a longer message it makes the message possible (the English ones; a
/// Spanish or French word inside a sentence is often another word: `alto` is "tall").
struct PerSe {
    words: &'static str,
    inside: bool,
}

const PER_SE: [PerSe; 30] = [
    // CTIA's keywords and the FCC's per-se words (April 2025 order).
    PerSe {
        words: "stop",
        inside: true,
    },
    PerSe {
        words: "stop all",
        inside: true,
    },
    PerSe {
        words: "stopall",
        inside: true,
    },
    PerSe {
        words: "quit",
        inside: true,
    },
    PerSe {
        words: "end",
        inside: true,
    },
    PerSe {
        words: "revoke",
        inside: true,
    },
    PerSe {
        words: "opt out",
        inside: true,
    },
    PerSe {
        words: "optout",
        inside: true,
    },
    PerSe {
        words: "cancel",
        inside: true,
    },
    PerSe {
        words: "unsubscribe",
        inside: true,
    },
    PerSe {
        words: "unsub",
        inside: true,
    },
    // Spanish.
    PerSe {
        words: "alto",
        inside: false,
    },
    PerSe {
        words: "parar",
        inside: false,
    },
    PerSe {
        words: "pare",
        inside: false,
    },
    PerSe {
        words: "cancelar",
        inside: false,
    },
    PerSe {
        words: "baja",
        inside: false,
    },
    PerSe {
        words: "de baja",
        inside: false,
    },
    PerSe {
        words: "dar de baja",
        inside: false,
    },
    PerSe {
        words: "darme de baja",
        inside: false,
    },
    PerSe {
        words: "detener",
        inside: false,
    },
    PerSe {
        words: "desuscribir",
        inside: false,
    },
    PerSe {
        words: "desuscribirme",
        inside: false,
    },
    PerSe {
        words: "fin",
        inside: false,
    },
    // French.
    PerSe {
        words: "arret",
        inside: false,
    },
    PerSe {
        words: "arreter",
        inside: false,
    },
    PerSe {
        words: "arretez",
        inside: false,
    },
    PerSe {
        words: "desabonner",
        inside: false,
    },
    PerSe {
        words: "desabonnement",
        inside: false,
    },
    PerSe {
        words: "desinscrire",
        inside: false,
    },
    PerSe {
        words: "annuler",
        inside: false,
    },
];

/// Polite or emphatic filler that may surround per-se words in a definite opt-out, and
/// lead-ins before a request (`I want to`, `can you`).
const FILLER: [&str; 60] = [
    "please",
    "pls",
    "plz",
    "now",
    "thanks",
    "thank you",
    "thx",
    "ty",
    "me",
    "it",
    "all",
    "this",
    "already",
    "again",
    "asap",
    "immediately",
    "right now",
    "ok",
    "okay",
    "yes",
    "hi",
    "hello",
    "hey",
    "sorry",
    "just",
    "kindly",
    "seriously",
    "not interested",
    "im not interested",
    "for good",
    "forever",
    "anymore",
    "any more",
    "i said",
    "i told you",
    "i want to",
    "i would like to",
    "id like to",
    "i wish to",
    "i need to",
    "can you",
    "could you",
    "would you",
    "will you",
    "can u",
    "you can",
    // Spanish.
    "por favor",
    "porfa",
    "favor",
    "gracias",
    "ya",
    "ahora",
    "hola",
    "no me interesa",
    // French.
    "svp",
    "sil vous plait",
    "merci",
    "maintenant",
    "moi",
    "bonjour",
];

/// Lead-ins that make a question a request (`Can you remove me from your list?`).
const REQUESTS: [&str; 9] = [
    "can you",
    "could you",
    "would you",
    "will you",
    "can u",
    "could u",
    "please",
    "pls",
    "kindly",
];

/// The next clause denies a question (`Wrong number? No, this is Ana`).
const DENIALS: [&str; 6] = ["no", "nope", "nah", "not", "its fine", "go ahead"];

/// Words before a per-se word that make it a noun (`the end`, `a stop`), not a request.
const DETERMINERS: [&str; 15] = [
    "the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "no", "that", "this",
    "every", "each",
];

/// A negation right before a removal or a refusal turns it around (`don't stop`,
/// `please do not remove me`).
const NEGATIONS: [&str; 9] = [
    "dont", "not", "never", "didnt", "wont", "cant", "cannot", "shouldnt", "wouldnt",
];

/// Words that end a clause before them: what follows is another request (`don't call
/// me but text me`, `remove me from the 9am slot and book 3pm`).
const CLAUSE_WORDS: [&str; 5] = ["but", "and", "just", "instead", "y"];

/// A removal of the lead from a list: revokes when nothing follows it but a list
/// (`from your list`) and filler. Names no channel.
const REMOVALS: [&str; 45] = [
    "remove me",
    "remove us",
    "remove my number",
    "remove this number",
    "remove my name",
    "remove my info",
    "remove my information",
    "remove my details",
    "remove my email",
    "remove my phone",
    "remove my contact",
    "delete me",
    "delete my number",
    "delete this number",
    "delete my info",
    "delete my information",
    "delete my details",
    "delete my email",
    "take me off",
    "take us off",
    "take my number off",
    "take my name off",
    "opt me out",
    "unsubscribe me",
    "unsub me",
    "lose my number",
    "lose this number",
    "forget my number",
    "erase my number",
    "cross me off",
    // Spanish.
    "eliminen mi numero",
    "elimina mi numero",
    "eliminar mi numero",
    "borren mi numero",
    "borra mi numero",
    "borrar mi numero",
    "quitame",
    "quitenme",
    "sacame",
    "saquenme",
    "eliminame",
    // French.
    "retirez moi",
    "supprimez mon numero",
    "desabonnez moi",
    "desinscrivez moi",
];

/// What may follow a removal: the list the lead is on (`from all your texting lists`).
const LIST_WORDS: [&str; 69] = [
    "from",
    "off",
    "of",
    "out",
    "on",
    "your",
    "the",
    "this",
    "that",
    "these",
    "ur",
    "all",
    "any",
    "every",
    "our",
    "my",
    "sms",
    "text",
    "texts",
    "texting",
    "txt",
    "mailing",
    "email",
    "emails",
    "e",
    "mail",
    "call",
    "calls",
    "calling",
    "contact",
    "contacts",
    "marketing",
    "distribution",
    "phone",
    "message",
    "messages",
    "messaging",
    "newsletter",
    "promo",
    "promotional",
    "automated",
    "spam",
    "subscriber",
    "subscription",
    "list",
    "lists",
    "database",
    "system",
    "records",
    "file",
    "files",
    "registry",
    "everything",
    "it",
    "there",
    "de",
    "la",
    "su",
    "tu",
    "lista",
    "sus",
    "base",
    "datos",
    "votre",
    "liste",
    "des",
    "vos",
    "le",
    "du",
];

/// A refusal word and what it names: `call` (voice), `text` (SMS), `email` (email);
/// `message`, `contact` name none.
const CONTACT_VERBS: [(&str, Named); 44] = [
    ("call", Named::CALLS),
    ("calling", Named::CALLS),
    ("calls", Named::CALLS),
    ("phone", Named::CALLS),
    ("phoning", Named::CALLS),
    ("phone calls", Named::CALLS),
    ("ring", Named::CALLS),
    ("ringing", Named::CALLS),
    ("robocall", Named::CALLS),
    ("robocalls", Named::CALLS),
    ("robocalling", Named::CALLS),
    ("voicemails", Named::CALLS),
    ("text", Named::TEXTS),
    ("texting", Named::TEXTS),
    ("texts", Named::TEXTS),
    ("txt", Named::TEXTS),
    ("txts", Named::TEXTS),
    ("txting", Named::TEXTS),
    ("sms", Named::TEXTS),
    ("text messages", Named::TEXTS),
    ("email", Named::EMAILS),
    ("emailing", Named::EMAILS),
    ("emails", Named::EMAILS),
    ("e mail", Named::EMAILS),
    ("e mails", Named::EMAILS),
    ("mail", Named::EMAILS),
    ("mailing", Named::EMAILS),
    ("message", Named::NONE),
    ("messaging", Named::NONE),
    ("messages", Named::NONE),
    ("msg", Named::NONE),
    ("msgs", Named::NONE),
    ("contact", Named::NONE),
    ("contacting", Named::NONE),
    ("bother", Named::NONE),
    ("bothering", Named::NONE),
    ("spam", Named::NONE),
    ("spamming", Named::NONE),
    ("harass", Named::NONE),
    ("harassing", Named::NONE),
    ("reach out", Named::NONE),
    ("reaching out", Named::NONE),
    ("pester", Named::NONE),
    ("pestering", Named::NONE),
];

/// The refusal before a contact verb (`don't` call, `stop` texting, `no more` texts).
const REFUSALS: [&str; 17] = [
    "do not",
    "dont",
    "dont ever",
    "do not ever",
    "never",
    "never ever",
    "stop",
    "quit",
    "cease",
    "no more",
    "no",
    "no further",
    "dont want",
    "dont want any",
    "dont want any more",
    "do not want",
    "stop sending me",
];

/// Refusals that count only opening a clause (`No texts please`, `Never call me again`;
/// not `I got no texts`).
const OPENING_REFUSALS: [&str; 4] = ["no", "no further", "never", "never ever"];

/// Refusals that are statements after a subject (`I don't text`).
const NEGATIVE_REFUSALS: [&str; 6] = [
    "do not",
    "dont",
    "dont ever",
    "do not ever",
    "never",
    "never ever",
];

/// The subjects that make a refusal a statement.
const SUBJECTS: [&str; 10] = [
    "i", "we", "they", "he", "she", "you", "u", "it", "who", "people",
];

/// Fixed refusals that count only opening a clause (`Go away`, not `it won't go away`).
const OPENING_FIXED: [&str; 6] = [
    "go away", "get lost", "buzz off", "back off", "no more", "no mas",
];

/// What the lead did to give a wrong number itself (`I gave you the wrong number`).
const SLIP_VERBS: [&str; 10] = [
    "gave", "give", "put", "entered", "typed", "wrote", "used", "sent", "left", "provided",
];

/// Refusals that take a noun (`no more texts`, not `no contact`): the contact words
/// they may be followed by.
const NOUN_REFUSALS: [&str; 8] = [
    "no",
    "no more",
    "no further",
    "dont want",
    "dont want any",
    "dont want any more",
    "do not want",
    "stop sending me",
];

/// The contact words that are nouns, for [`NOUN_REFUSALS`].
const CONTACT_NOUNS: [&str; 14] = [
    "calls",
    "phone calls",
    "robocalls",
    "voicemails",
    "texts",
    "txts",
    "sms",
    "text messages",
    "emails",
    "e mails",
    "mail",
    "messages",
    "msgs",
    "spam",
];

/// Between a refusal and its verb (`stop with the calls`, `no more of your texts`).
const REFUSAL_OBJECTS: [&str; 14] = [
    "the",
    "these",
    "those",
    "your",
    "all",
    "all the",
    "all these",
    "all your",
    "with the",
    "with these",
    "with your",
    "of your",
    "any",
    "more",
];

/// Refusals said in one piece, and what they name.
const FIXED: [(&str, Named); 42] = [
    ("leave me alone", Named::NONE),
    ("leave us alone", Named::NONE),
    ("go away", Named::NONE),
    ("get lost", Named::NONE),
    ("buzz off", Named::NONE),
    ("back off", Named::NONE),
    ("piss off", Named::NONE),
    ("fuck off", Named::NONE),
    ("wrong number", Named::NONE),
    ("wrong person", Named::NONE),
    ("no more", Named::NONE),
    // Spanish.
    ("no mas", Named::NONE),
    ("no mas mensajes", Named::NONE),
    ("no me escribas", Named::NONE),
    ("no me escriban", Named::NONE),
    ("no me contactes", Named::NONE),
    ("no me contacten", Named::NONE),
    ("no me molestes", Named::NONE),
    ("no me molesten", Named::NONE),
    ("dejen de escribirme", Named::NONE),
    ("deja de escribirme", Named::NONE),
    ("dejen de molestar", Named::NONE),
    ("dejen de molestarme", Named::NONE),
    ("dejame en paz", Named::NONE),
    ("dejenme en paz", Named::NONE),
    ("numero equivocado", Named::NONE),
    ("no me llames", Named::CALLS),
    ("no me llamen", Named::CALLS),
    ("dejen de llamarme", Named::CALLS),
    ("deja de llamarme", Named::CALLS),
    ("no mas llamadas", Named::CALLS),
    ("no mas correos", Named::EMAILS),
    // French.
    ("laissez moi tranquille", Named::NONE),
    ("mauvais numero", Named::NONE),
    ("ne me contactez plus", Named::NONE),
    ("ne mecrivez plus", Named::NONE),
    ("plus de messages", Named::NONE),
    ("arretez de mecrire", Named::NONE),
    ("ne mappelez plus", Named::CALLS),
    ("arretez de mappeler", Named::CALLS),
    ("plus dappels", Named::CALLS),
    ("plus de sms", Named::TEXTS),
];

/// What may follow a refusal: its object and how long it lasts (`don't call me ever
/// again`), besides filler and a list.
const REFUSAL_TAIL: [&str; 25] = [
    "mas",
    "nunca",
    "plus",
    "me",
    "us",
    "him",
    "her",
    "them",
    "here",
    "back",
    "ever",
    "anymore",
    "again",
    "at all",
    "to me",
    "with me",
    "my number",
    "this number",
    "my phone",
    "my cell",
    "my email",
    "my inbox",
    "these",
    "those",
    "lol",
];

/// After a per-se word, a word that makes it something else (`stop by`, `the end of`).
const NOT_AFTER_PER_SE: [&str; 6] = ["of", "by", "in", "over", "light", "sign"];

/// Before a per-se word, a word that makes it a noun (`bus stop`, `year end`).
const NOT_BEFORE_PER_SE: [&str; 22] = [
    "bus", "truck", "pit", "full", "rest", "non", "next", "last", "first", "one", "dead", "back",
    "front", "deep", "year", "month", "week", "weekend", "rear", "tail", "west", "east",
];

/// The things a meeting is called: `cancel my appointment` is about a meeting.
const MEETING_WORDS: [&str; 12] = [
    "appointment",
    "appt",
    "meeting",
    "call",
    "booking",
    "reservation",
    "visit",
    "demo",
    "consultation",
    "session",
    "cita",
    "rendez vous",
];

/// The words a reply cancelling a meeting is made of, besides filler.
const MEETING_CANCELS: [&str; 5] = ["c", "cancel", "cancelar", "annuler", "cancel that"];

/// Tables split into words once.
struct Tables {
    per_se: Vec<(Vec<&'static str>, bool)>,
    filler: Vec<Vec<&'static str>>,
    requests: Vec<Vec<&'static str>>,
    denials: Vec<Vec<&'static str>>,
    removals: Vec<Vec<&'static str>>,
    verbs: Vec<(Vec<&'static str>, Named)>,
    refusals: Vec<Vec<&'static str>>,
    refusal_objects: Vec<Vec<&'static str>>,
    fixed: Vec<(Vec<&'static str>, Named)>,
    tail: Vec<Vec<&'static str>>,
    meeting_words: Vec<Vec<&'static str>>,
    /// Every single word of the per-se phrases: what leetspeak and slips are read as.
    vocabulary: Vec<&'static str>,
}

fn split(phrase: &'static str) -> Vec<&'static str> {
    phrase.split(' ').collect()
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| {
    let mut vocabulary: Vec<&'static str> = PER_SE
        .iter()
        .flat_map(|p| p.words.split(' '))
        .chain(["me", "please"])
        .collect();
    vocabulary.sort_unstable();
    vocabulary.dedup();
    Tables {
        per_se: PER_SE.iter().map(|p| (split(p.words), p.inside)).collect(),
        filler: FILLER.iter().map(|f| split(f)).collect(),
        requests: REQUESTS.iter().map(|f| split(f)).collect(),
        denials: DENIALS.iter().map(|f| split(f)).collect(),
        removals: REMOVALS.iter().map(|f| split(f)).collect(),
        verbs: CONTACT_VERBS.iter().map(|(v, n)| (split(v), *n)).collect(),
        refusals: REFUSALS.iter().map(|f| split(f)).collect(),
        refusal_objects: REFUSAL_OBJECTS.iter().map(|f| split(f)).collect(),
        fixed: FIXED.iter().map(|(v, n)| (split(v), *n)).collect(),
        tail: REFUSAL_TAIL.iter().map(|f| split(f)).collect(),
        meeting_words: MEETING_WORDS.iter().map(|f| split(f)).collect(),
        vocabulary,
    }
});

/// Reads `text` (an SMS, an email's subject or own text, a caller's turn) with the
/// organization's own opt-out keywords beside the per-se words.
pub fn read(text: &str, own_keywords: &[String]) -> Reading {
    read_beside_meeting(text, own_keywords, false)
}

/// The words that cancel a meeting as well as consent.
const CANCEL_WORDS: [&str; 3] = ["cancel", "cancelar", "annuler"];

/// [`read`] for a lead with a meeting booked (`booked`): then `cancel` (`Actually,
/// cancel it`) may be about the meeting, and makes a possible opt-out, not a definite
/// one (a person or the assistant decides).
pub fn read_beside_meeting(text: &str, own_keywords: &[String], booked: bool) -> Reading {
    let own: Vec<String> = own_keywords.iter().map(|k| fold_words(k)).collect();
    let own: Vec<Vec<&str>> = own
        .iter()
        .map(|k| k.split(' ').filter(|w| !w.is_empty()).collect())
        .filter(|k: &Vec<&str>| !k.is_empty())
        .collect();
    let clauses = clauses(text);
    let mut reading = Reading::Nothing;
    for (at, clause) in clauses.iter().enumerate() {
        let words: Vec<&str> = clause.words.iter().map(String::as_str).collect();
        let next = clauses.get(at + 1);
        reading = reading.or(read_clause(&words, clause.question, next, &own, booked));
    }
    reading
}

/// A clause: its words, and whether it ends with a question mark.
#[derive(Debug)]
struct Clause {
    words: Vec<String>,
    question: bool,
}

/// How a word ends: with a space, a comma, the end of a sentence or a question mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Break {
    Space,
    Comma,
    Sentence,
    Question,
}

/// A word and the marks after it.
#[derive(Debug)]
struct Token {
    word: String,
    marks: String,
}

impl Token {
    fn ends(&self) -> Break {
        let has = |set: &str| self.marks.chars().any(|c| set.contains(c));
        if has("?") && !has("!") {
            Break::Question
        } else if has(".!;:\n\r¡¿…()[]") {
            Break::Sentence
        } else if has(",") {
            Break::Comma
        } else {
            Break::Space
        }
    }
}

/// `text` folded and cut into words with the marks after each.
fn tokens(text: &str) -> Vec<Token> {
    let folded = fold(text);
    let mut out: Vec<Token> = Vec::new();
    let mut word = String::new();
    let mut marks = String::new();
    for c in folded.chars() {
        if matches!(c, '\'' | '\u{2019}' | '\u{2018}' | '\u{02bc}' | '`') {
            continue;
        }
        if c.is_alphanumeric() || matches!(c, '$' | '@') {
            if !word.is_empty() && !marks.is_empty() {
                out.push(Token {
                    word: std::mem::take(&mut word),
                    marks: std::mem::take(&mut marks),
                });
            } else if word.is_empty() && !marks.is_empty() {
                // Marks before the first word.
                marks.clear();
            }
            word.push(c);
        } else if !word.is_empty() {
            marks.push(c);
        }
    }
    if !word.is_empty() {
        out.push(Token { word, marks });
    }
    let out = join_spelled(out);
    out.into_iter()
        .filter_map(|t| {
            let word = read_word(&t.word)?;
            Some(Token {
                word,
                marks: t.marks,
            })
        })
        .collect()
}

/// Letters spelled out one by one (`S T O P`, `S.T.O.P`, `s-t-o-p`): three or more
/// single letters or digits with only spaces, dots, dashes or stars between them are one
/// word.
fn join_spelled(tokens: Vec<Token>) -> Vec<Token> {
    let single = |t: &Token| t.word.chars().count() == 1;
    let spelling = |t: &Token| t.marks.chars().all(|c| " \t.-_*/|~·•+".contains(c));
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut at = 0;
    while at < tokens.len() {
        let mut end = at;
        while end + 1 < tokens.len()
            && single(&tokens[end])
            && spelling(&tokens[end])
            && single(&tokens[end + 1])
        {
            end += 1;
        }
        if end - at >= 2 && single(&tokens[at]) {
            let word: String = tokens[at..=end].iter().map(|t| t.word.as_str()).collect();
            let marks = tokens[end].marks.clone();
            out.push(Token { word, marks });
            at = end + 1;
        } else {
            let t = &tokens[at];
            out.push(Token {
                word: t.word.clone(),
                marks: t.marks.clone(),
            });
            at += 1;
        }
    }
    out
}

/// A word as it is read: a per-se word written with leetspeak digits (`st0p`, `$top`),
/// repeated letters (`stooop`) or one typing slip (`unsubcribe`) is that word; `$` and
/// `@` elsewhere are dropped (none: the word was only marks).
fn read_word(word: &str) -> Option<String> {
    let vocabulary = &TABLES.vocabulary;
    if vocabulary.contains(&word) {
        return Some(word.to_string());
    }
    let letters = word.chars().any(char::is_alphabetic);
    if letters
        && word
            .chars()
            .any(|c| c.is_ascii_digit() || c == '$' || c == '@')
    {
        for one in ['i', 'l'] {
            let plain: String = word
                .chars()
                .map(|c| match c {
                    '0' => 'o',
                    '1' => one,
                    '3' => 'e',
                    '4' | '@' => 'a',
                    '5' | '$' => 's',
                    '7' => 't',
                    '8' => 'b',
                    '9' => 'g',
                    other => other,
                })
                .collect();
            if vocabulary.contains(&plain.as_str()) {
                return Some(plain);
            }
        }
    }
    let word: String = word.chars().filter(|c| !matches!(c, '$' | '@')).collect();
    if word.is_empty() {
        return None;
    }
    let collapsed = collapse(&word);
    if collapsed != word {
        if let Some(v) = vocabulary.iter().find(|v| collapse(v) == collapsed) {
            return Some((*v).to_string());
        }
    }
    if word.chars().count() >= 9 {
        if let Some(v) = vocabulary
            .iter()
            .find(|v| v.len() >= 9 && within_one_edit(&word, v))
        {
            return Some((*v).to_string());
        }
    }
    Some(word)
}

/// `word` with every run of one letter as one (`stoppp` is `stop`, `all` is `al`).
fn collapse(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut last = None;
    for c in word.chars() {
        if last != Some(c) {
            out.push(c);
        }
        last = Some(c);
    }
    out
}

/// Whether `a` becomes `b` by at most one letter inserted, dropped, changed or two
/// neighbours swapped.
fn within_one_edit(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a == b {
        return true;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[prefix..], &b[prefix..]);
    match ra.len() as isize - rb.len() as isize {
        0 => {
            ra[1..] == rb[1..]
                || (ra.len() >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..])
        }
        1 => ra[1..] == *rb,
        -1 => *ra == rb[1..],
        _ => false,
    }
}

/// The words of `text` as a reader compares them (the organization's own keywords).
fn fold_words(text: &str) -> String {
    tokens(text)
        .iter()
        .map(|t| t.word.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` cut into clauses.
fn clauses(text: &str) -> Vec<Clause> {
    let mut out = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let tokens = tokens(text);
    let verb = |at: usize| {
        tokens
            .get(at)
            .is_some_and(|t| CONTACT_VERBS.iter().any(|(v, _)| *v == t.word))
    };
    for (at, token) in tokens.iter().enumerate() {
        let joins_verbs = matches!(token.word.as_str(), "and" | "y") && verb(at + 1);
        if CLAUSE_WORDS.contains(&token.word.as_str()) && !words.is_empty() && !joins_verbs {
            out.push(Clause {
                words: std::mem::take(&mut words),
                question: false,
            });
        }
        let ends = token.ends();
        words.push(token.word.clone());
        if ends != Break::Space {
            out.push(Clause {
                words: std::mem::take(&mut words),
                question: ends == Break::Question,
            });
        }
    }
    if !words.is_empty() {
        out.push(Clause {
            words,
            question: false,
        });
    }
    out
}

/// The length of `phrase` if `words` has it at `at`.
fn phrase_at(words: &[&str], at: usize, phrase: &[&str]) -> Option<usize> {
    let end = at + phrase.len();
    (end <= words.len() && words[at..end] == *phrase).then_some(phrase.len())
}

/// The longest of `phrases` at `at`.
fn longest_at(words: &[&str], at: usize, phrases: &[Vec<&str>]) -> Option<usize> {
    phrases.iter().filter_map(|p| phrase_at(words, at, p)).max()
}

/// Whether `words` are only phrases of the given lists (each word covered once).
fn covered_by(words: &[&str], lists: &[&[Vec<&str>]]) -> bool {
    let n = words.len();
    let mut reach = vec![false; n + 1];
    reach[0] = true;
    for at in 0..n {
        if !reach[at] {
            continue;
        }
        for list in lists {
            for p in list.iter() {
                if let Some(len) = phrase_at(words, at, p) {
                    reach[at + len] = true;
                }
            }
        }
    }
    reach[n]
}

/// Reads one clause; `next` is the clause after it (a denial of a question).
fn read_clause(
    words: &[&str],
    question: bool,
    next: Option<&Clause>,
    own: &[Vec<&str>],
    booked: bool,
) -> Reading {
    if words.is_empty() {
        return Reading::Nothing;
    }
    let t = &*TABLES;
    let cancel = |p: &[&str]| booked && p.len() == 1 && CANCEL_WORDS.contains(&p[0]);
    let per_se: Vec<Vec<&str>> = t
        .per_se
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| !cancel(p))
        .chain(own.iter().cloned())
        .collect();
    if only_per_se_and_filler(words, &per_se, &t.filler) {
        return Reading::Definite(Named::NONE);
    }
    if let Some(named) = refusal_or_removal(words) {
        if !question {
            return Reading::Definite(named);
        }
        let denied = next.is_some_and(|n| {
            let next: Vec<&str> = n.words.iter().map(String::as_str).collect();
            longest_at(&next, 0, &t.denials).is_some()
        });
        if denied {
            return Reading::Nothing;
        }
        if longest_at(words, 0, &t.requests).is_some() {
            return Reading::Definite(named);
        }
        return Reading::Possible;
    }
    let inside: Vec<Vec<&str>> = t
        .per_se
        .iter()
        .filter(|(p, inside)| *inside || cancel(p))
        .map(|(p, _)| p.clone())
        .chain(own.iter().cloned())
        .collect();
    if per_se_used_as_verb(words, &inside) {
        return Reading::Possible;
    }
    Reading::Nothing
}

/// Whether `words` is a sequence of per-se phrases and filler, at least one per-se.
fn only_per_se_and_filler(words: &[&str], per_se: &[Vec<&str>], filler: &[Vec<&str>]) -> bool {
    // reach[i]: the first i words can be covered; with[i]: covered with a per-se phrase.
    let n = words.len();
    let mut reach = vec![false; n + 1];
    let mut with = vec![false; n + 1];
    reach[0] = true;
    for at in 0..n {
        if !reach[at] {
            continue;
        }
        for p in per_se {
            if let Some(len) = phrase_at(words, at, p) {
                reach[at + len] = true;
                with[at + len] = true;
            }
        }
        for f in filler {
            if let Some(len) = phrase_at(words, at, f) {
                reach[at + len] = true;
                with[at + len] |= with[at];
            }
        }
    }
    with[n]
}

/// A removal (`remove me from your list`) or a refusal (`don't call me`, `leave me
/// alone`) anywhere in the clause, not negated, with nothing after it but what may
/// follow it: the channels it names.
fn refusal_or_removal(words: &[&str]) -> Option<Named> {
    let t = &*TABLES;
    let negated = |at: usize| at > 0 && NEGATIONS.contains(&words[at - 1]);
    let list: Vec<Vec<&str>> = LIST_WORDS.iter().map(|w| vec![*w]).collect();
    let rest_is = |from: usize, allowed: &[&[Vec<&str>]]| covered_by(&words[from..], allowed);
    // Only filler before `at`: the phrase opens the clause (`Go away`, not `the pain
    // won't go away`).
    let opens = |at: usize| covered_by(&words[..at], &[&t.filler]);
    // A subject before `don't`: a statement (`I don't text`, `you never call me back`).
    let stated = |at: usize| at > 0 && SUBJECTS.contains(&words[at - 1]);
    // `I gave you the wrong number` is the lead's own slip.
    let own_slip = |at: usize| {
        words[..at]
            .windows(2)
            .any(|w| w[0] == "i" && SLIP_VERBS.contains(&w[1]))
    };
    for at in 0..words.len() {
        if negated(at) {
            continue;
        }
        for (refusal, said) in t.refusals.iter().zip(REFUSALS) {
            let Some(len) = phrase_at(words, at, refusal) else {
                continue;
            };
            if (OPENING_REFUSALS.contains(&said) && !opens(at))
                || (NEGATIVE_REFUSALS.contains(&said) && stated(at))
            {
                continue;
            }
            let nouns = NOUN_REFUSALS.contains(&said);
            if let Some((named, end)) = contact_verbs(words, at + len, nouns) {
                if rest_is(end, &[&t.tail, &t.filler, &list]) {
                    return Some(named);
                }
            }
        }
        for removal in &t.removals {
            if let Some(len) = phrase_at(words, at, removal) {
                if rest_is(at + len, &[&list, &t.filler]) {
                    return Some(Named::NONE);
                }
            }
        }
        for ((phrase, named), said) in t.fixed.iter().zip(FIXED) {
            if (OPENING_FIXED.contains(&said.0) && !opens(at))
                || (said.1 == Named::NONE && said.0.ends_with("number") && own_slip(at))
            {
                continue;
            }
            if let Some(len) = phrase_at(words, at, phrase) {
                if rest_is(at + len, &[&t.tail, &t.filler, &list]) {
                    return Some(*named);
                }
            }
        }
    }
    None
}

/// Contact verbs from `at` (after a refusal: `the calls`, `calling or texting me`; only
/// nouns after `no more`): the channels they name and where they end.
fn contact_verbs(words: &[&str], at: usize, nouns: bool) -> Option<(Named, usize)> {
    let t = &*TABLES;
    let mut at = at + longest_at(words, at, &t.refusal_objects).unwrap_or(0);
    let verb = |at: usize| {
        t.verbs
            .iter()
            .filter(|(v, _)| !nouns || CONTACT_NOUNS.contains(&v.join(" ").as_str()))
            .filter_map(|(v, named)| phrase_at(words, at, v).map(|len| (len, *named)))
            .max_by_key(|(len, _)| *len)
    };
    let (len, mut named) = verb(at)?;
    let mut general = named.is_none();
    at += len;
    loop {
        let mut next = at;
        if matches!(words.get(next), Some(&"me") | Some(&"us")) {
            next += 1;
        }
        if !matches!(
            words.get(next),
            Some(&"or") | Some(&"nor") | Some(&"and") | Some(&"ni")
        ) {
            break;
        }
        let Some((len, more)) = verb(next + 1) else {
            break;
        };
        general |= more.is_none();
        named = named.with(more);
        at = next + 1 + len;
    }
    Some((if general { Named::NONE } else { named }, at))
}

/// Whether a per-se phrase appears in `words` as a request: not as a noun (after a
/// determiner, or before `of`), not negated (`don't stop`), not `stop by`, and not
/// `cancel` of a meeting.
fn per_se_used_as_verb(words: &[&str], per_se: &[Vec<&str>]) -> bool {
    let t = &*TABLES;
    (0..words.len()).any(|at| {
        per_se.iter().any(|p| {
            phrase_at(words, at, p).is_some_and(|len| {
                let before = at.checked_sub(1).map(|b| words[b]);
                let after = words.get(at + len).copied();
                let noun = before
                    .is_some_and(|b| DETERMINERS.contains(&b) || NOT_BEFORE_PER_SE.contains(&b));
                // `don't stop` is no request to stop; `if you don't stop` is one.
                let condition = at >= 3 && matches!(words[at - 3], "if" | "unless");
                let negated = before.is_some_and(|b| NEGATIONS.contains(&b)) && !condition;
                let other = after.is_some_and(|a| NOT_AFTER_PER_SE.contains(&a));
                let meeting = CANCEL_WORDS.contains(&p[0]) && {
                    let object = at
                        + len
                        + longest_at(words, at + len, &t.refusal_objects)
                            .or_else(|| matches!(after, Some("my")).then_some(1))
                            .unwrap_or(0);
                    longest_at(words, object, &t.meeting_words).is_some()
                };
                !noun && !negated && !other && !meeting
            })
        })
    })
}

/// Whether `text` asks to cancel a meeting and says nothing else: `C`, `Cancel`,
/// `cancel my appointment please`, `I need to cancel`. `conversation::inbound` cancels the
/// meeting a confirmation or reminder it answers offered to cancel so.
pub fn cancels_meeting(text: &str) -> bool {
    let t = &*TABLES;
    let tokens = tokens(text);
    let words: Vec<&str> = tokens.iter().map(|t| t.word.as_str()).collect();
    let cancels: Vec<Vec<&str>> = MEETING_CANCELS.iter().map(|c| split(c)).collect();
    let mut objects: Vec<Vec<&str>> = Vec::new();
    for meeting in &t.meeting_words {
        for det in ["my", "the", "this", "our", "that", "mi", "la"] {
            let mut o = vec![det];
            o.extend(meeting.iter().copied());
            objects.push(o);
        }
        objects.push(meeting.clone());
    }
    let n = words.len();
    // reach[i]: the first i words are filler, cancels and objects; with: a cancel seen.
    let mut reach = vec![false; n + 1];
    let mut with = vec![false; n + 1];
    reach[0] = true;
    for at in 0..n {
        if !reach[at] {
            continue;
        }
        for c in &cancels {
            if let Some(len) = phrase_at(&words, at, c) {
                reach[at + len] = true;
                with[at + len] = true;
            }
        }
        for f in t.filler.iter().chain(&objects) {
            if let Some(len) = phrase_at(&words, at, f) {
                reach[at + len] = true;
                with[at + len] |= with[at];
            }
        }
    }
    with[n]
}

/// The reply's own words of an email body: quoted lines (`> ...`) dropped, and
/// everything after an original message that is not quoted (`-----Original
/// Message-----`, an `On ... wrote:` line not followed by quoted lines) or a signature
/// (`-- `). A reply written below the quote (bottom-posted) is kept.
pub fn own_text(body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at].trim();
        let lower = line.to_lowercase();
        if lower.starts_with("-----original message")
            || lower.starts_with("________________")
            || line == "--"
            || lower.starts_with("begin forwarded message")
        {
            break;
        }
        let attribution = attribution_at(&lines, at);
        if let Some(len) = attribution {
            let quoted = lines[at + len..]
                .iter()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.trim_start().starts_with('>'));
            if !quoted {
                break;
            }
            at += len;
            continue;
        }
        if !line.starts_with('>') {
            kept.push(lines[at]);
        }
        at += 1;
    }
    kept.join("\n").trim().to_string()
}

/// An attribution of a quote at line `at` (`On Mon, Nov 2, 2026 at 9:00 AM Sam <...>
/// wrote:`, over one or two lines; `El ... escribió:`, `Le ... a écrit :`): its lines.
fn attribution_at(lines: &[&str], at: usize) -> Option<usize> {
    let opens = |l: &str| {
        let l = l.trim().to_lowercase();
        l.starts_with("on ") || l.starts_with("el ") || l.starts_with("le ")
    };
    let closes = |l: &str| {
        let l = l.trim().to_lowercase();
        l.ends_with("wrote:")
            || l.ends_with("escribió:")
            || l.ends_with("écrit :")
            || l.ends_with("écrit:")
    };
    let line = lines[at];
    if opens(line) && closes(line) {
        return Some(1);
    }
    let next = lines.get(at + 1)?;
    (opens(line) && closes(next)).then_some(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: Reading = Reading::Definite(Named::NONE);

    #[test]
    fn normalizing_folds_width_case_punctuation_and_invisible_characters() {
        let table = [
            ("ＳＴＯＰ", "stop"),
            ("stop.", "stop"),
            ("Stop!", "stop"),
            ("\"STOP\"", "stop"),
            ("STOP\u{200b}", "stop"),
            ("OPT-OUT", "opt out"),
            ("  Stop   please  ", "stop please"),
            ("Don't text me", "dont text me"),
            ("Don’t text me", "dont text me"),
            ("stop 🛑🛑", "stop"),
            ("S\u{200b}T\u{200c}OP", "stop"),
            ("ﬁne", "fine"),
            ("", ""),
        ];
        for (text, normalized) in table {
            assert_eq!(normalize(text), normalized, "{text:?}");
        }
    }

    #[test]
    fn disguised_letters_are_read_as_the_word() {
        let table = [
            ("S T O P", "stop"),
            ("S.T.O.P.", "stop"),
            ("s-t-o-p", "stop"),
            ("st0p", "stop"),
            ("$T0P", "stop"),
            ("\u{0405}\u{0422}\u{041e}\u{0420}", "stop"),
            ("S\u{0336}T\u{0336}O\u{0336}P\u{0336}", "stop"),
            ("🇸🇹🇴🇵", "stop"),
            ("STOOOOP", "stop"),
            ("unsubcribe", "unsubscribe"),
            ("unsubscibe", "unsubscribe"),
            ("Arrêt", "arret"),
            ("¡BASTA!", "basta"),
            ("No más", "no mas"),
            ("subscribe", "subscribe"),
            ("ana@example.com", "anaexample com"),
        ];
        for (text, words) in table {
            assert_eq!(fold_words(text), words, "{text:?}");
        }
    }

    #[test]
    fn the_definite_forms_opt_out() {
        for text in [
            "Stop please",
            "STOP!!!",
            "Please unsubscribe me",
            "opt out",
            "OPT-OUT",
            "Remove me from your list",
            "please remove me from your list",
            "Wrong number",
            "ＳＴＯＰ",
            "stop.",
            "\"STOP\"",
            "STOP\u{200b}",
            "UNSUBSCRIBE ME",
            "STOP ALL",
            "STOP STOP",
            "quit",
            "End",
            "revoke",
            "Cancel it",
            "thank you stop",
            "I told you already, leave me alone",
            "not interested stop",
            "dont contact",
            "Who is this? Stop",
        ] {
            assert_eq!(read(text, &[]), D, "{text:?}");
        }
    }

    #[test]
    fn a_refusal_of_one_channel_names_it() {
        assert_eq!(
            read("stop texting me", &[]),
            Reading::Definite(Named::TEXTS)
        );
        assert_eq!(
            read("Don't call me, text me", &[]),
            Reading::Definite(Named::CALLS)
        );
        assert_eq!(
            read("do not call me again", &[]),
            Reading::Definite(Named::CALLS)
        );
        assert_eq!(
            read("stop calling and texting me", &[]),
            Reading::Definite(Named::CALLS.with(Named::TEXTS))
        );
        assert_eq!(read("Stop texting me. Stop.", &[]), D);
        assert_eq!(Named::CALLS.channels(), vec![Channel::Voice]);
        assert!(Named::NONE.channels().is_empty());
    }

    #[test]
    fn the_possible_forms_hold() {
        for text in [
            "I want to stop getting these but call me next week",
            "can we end this",
            "how do I unsubscribe from the newsletter but keep texts",
            "Wrong number?",
        ] {
            assert_eq!(read(text, &[]), Reading::Possible, "{text:?}");
        }
    }

    #[test]
    fn ordinary_messages_are_nothing() {
        for text in [
            "I'll be there at the end of the day",
            "Yes, Tuesday works",
            "What's the price?",
            "",
            "!!!",
            "the stop sign by the office",
            "Can you call me tomorrow?",
            "Take me off the grid!",
            "Do not call before 5pm please",
            "Remove me from the 9am slot and book 3pm",
            "Wrong number? No, this is Ana, go ahead",
            "please don't stop texting me",
        ] {
            assert_eq!(read(text, &[]), Reading::Nothing, "{text:?}");
        }
    }

    #[test]
    fn the_organizations_own_keywords_are_per_se_words() {
        let own = vec!["BASTA".to_string(), "no more".to_string()];
        assert_eq!(read("basta!", &own), D);
        assert_eq!(read("No more please", &own), D);
        assert_eq!(
            read("I said basta to him yesterday", &own),
            Reading::Possible
        );
        let own = vec!["zut".to_string()];
        assert_eq!(read("zut", &own), D);
        assert_eq!(read("zut", &[]), Reading::Nothing);
    }

    #[test]
    fn a_cancel_of_a_meeting_is_told_apart() {
        for text in [
            "C",
            "c.",
            "Cancel",
            "cancel please",
            "Please cancel my appointment",
            "I need to cancel the meeting",
            "cancelar",
        ] {
            assert!(cancels_meeting(text), "{text:?}");
        }
        for text in ["", "Stop", "cancel and stop texting me", "R", "can we talk"] {
            assert!(!cancels_meeting(text), "{text:?}");
        }
        assert_eq!(read("cancel my appointment", &[]), Reading::Nothing);
        for text in ["Cancel", "Actually, cancel it.", "cancelar"] {
            assert_eq!(read(text, &[]), D, "{text:?}");
            assert_eq!(
                read_beside_meeting(text, &[], true),
                Reading::Possible,
                "{text:?}"
            );
        }
        assert_eq!(read_beside_meeting("Stop", &[], true), D);
    }

    #[test]
    fn an_emails_own_text_leaves_the_quote_out() {
        let top = "Thanks, see you then.\n\nOn Mon, Nov 2, 2026 at 9:00 AM Acme <a@example.com> wrote:\n> Reply STOP to opt out\n> unsubscribe";
        assert_eq!(own_text(top), "Thanks, see you then.");
        let bottom = "On Mon, Nov 2, 2026 at 9:00 AM Acme <a@example.com>\nwrote:\n> Hi Ana, are you free?\n>\n\nSTOP";
        assert_eq!(own_text(bottom), "STOP");
        let outlook = "Sounds good\n\n-----Original Message-----\nFrom: Acme\nunsubscribe here";
        assert_eq!(own_text(outlook), "Sounds good");
        let unquoted = "Ok\n\nOn Mon, Acme wrote:\nunsubscribe";
        assert_eq!(own_text(unquoted), "Ok");
        assert_eq!(
            own_text("Hi Sam,\n\nPlease remove me from your list.\n\n-- \nAna"),
            "Hi Sam,\n\nPlease remove me from your list."
        );
    }

    /// Any message made of one per-se word with filler and punctuation around it opts
    /// out: generated from a fixed seed, so a failure names its message.
    #[test]
    fn any_per_se_word_with_filler_and_punctuation_opts_out() {
        let punctuation = [
            "", "!", ".", "...", "?!", ",", " - ", "\"", "🙏", "\u{200b}",
        ];
        let mut seed: u64 = 0x5eed_cafe;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) as usize) % n
        };
        for _ in 0..5_000 {
            let mut message = String::new();
            let before = next(3);
            for _ in 0..before {
                message.push_str(FILLER[next(FILLER.len())]);
                message.push_str(punctuation[next(punctuation.len())]);
                message.push(' ');
            }
            let word = PER_SE[next(PER_SE.len())].words;
            message.push_str(&if next(2) == 0 {
                word.to_uppercase()
            } else {
                word.to_string()
            });
            message.push_str(punctuation[next(punctuation.len())]);
            for _ in 0..next(3) {
                message.push(' ');
                message.push_str(FILLER[next(FILLER.len())]);
                message.push_str(punctuation[next(punctuation.len())]);
            }
            assert_eq!(read(&message, &[]), D, "{message:?}");
        }
    }

    /// What a labelled message should read as.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Label {
        /// Definite, of the channels named (none: every channel as the scope has it).
        Definite(Named),
        /// Possible: the lead is held for a person.
        Held,
        Nothing,
    }

    use Label::{Held, Nothing};
    const ALL: Label = Label::Definite(Named::NONE);
    const CALLS: Label = Label::Definite(Named::CALLS);
    const TEXTS: Label = Label::Definite(Named::TEXTS);
    const EMAILS: Label = Label::Definite(Named::EMAILS);

    /// Labelled messages. Sources: [CTIA] CTIA Messaging Principles and Best Practices,
    /// the opt-out keywords STOP, END, CANCEL, UNSUBSCRIBE, QUIT, STOPALL, REVOKE, OPTOUT;
    /// [FCC] the FCC's revocation rule (47 CFR 64.1200(a)(10), in force April 11, 2025):
    /// "stop", "quit", "end", "revoke", "opt out", "cancel" or "unsubscribe" in reply to a
    /// text is a revocation per se, and any other reasonable means counts; [ISSUE] issue
    /// 41's probe (the wordings that did nothing, and the ones wrongly read as opt-outs);
    /// [SPEC] `shared/spec/consent.md`'s examples; [ES]/[FR] Spanish and French wordings
    /// of the same (carriers' Spanish keywords ALTO, PARAR, CANCELAR, BAJA); [ORD]
    /// ordinary replies a lead sends, which must read as nothing.
    const TABLE: &[(&str, Label)] = &[
        // [CTIA] the keywords, alone and with case, punctuation and filler.
        ("STOP", ALL),
        ("stop", ALL),
        ("Stop.", ALL),
        ("STOP!!!", ALL),
        ("END", ALL),
        ("End", ALL),
        ("CANCEL", ALL),
        ("cancel", ALL),
        ("UNSUBSCRIBE", ALL),
        ("Unsubscribe", ALL),
        ("QUIT", ALL),
        ("quit!", ALL),
        ("STOPALL", ALL),
        ("STOP ALL", ALL),
        ("REVOKE", ALL),
        ("revoke", ALL),
        ("OPTOUT", ALL),
        ("OPT OUT", ALL),
        ("opt-out", ALL),
        ("Opt out please", ALL),
        // [FCC] per-se words with the filler a person adds.
        ("Stop please", ALL),
        ("Please stop", ALL),
        ("stop it", ALL),
        ("Stop now", ALL),
        ("STOP STOP STOP", ALL),
        ("Please unsubscribe me", ALL),
        ("unsubscribe me please", ALL),
        ("I want to opt out", ALL),
        ("I would like to unsubscribe", ALL),
        ("Can you stop", ALL),
        ("Stop, thank you", ALL),
        ("thanks, stop", ALL),
        ("Ok stop", ALL),
        ("Cancel it", ALL),
        ("Quit it", ALL),
        ("not interested stop", ALL),
        ("Not interested. Stop", ALL),
        ("revoke please", ALL),
        ("end please", ALL),
        ("Stop?!", ALL),
        // [SPEC] the examples of consent.md.
        ("Remove me from your list", ALL),
        ("Wrong number", ALL),
        ("stop texting me", TEXTS),
        ("ＳＴＯＰ", ALL),
        ("\"STOP\"", ALL),
        ("STOP\u{200b}", ALL),
        ("I want to stop getting these but call me next week", Held),
        ("can we end this", Held),
        ("I'll be there at the end of the day", Nothing),
        // [ISSUE] spelled and disguised.
        ("S T O P", ALL),
        ("S.T.O.P", ALL),
        ("S.T.O.P.", ALL),
        ("s-t-o-p", ALL),
        ("s t o p please", ALL),
        ("st0p", ALL),
        ("ST0P", ALL),
        ("$TOP", ALL),
        ("5TOP", ALL),
        ("0pt 0ut", ALL),
        ("unsubscr1be", ALL),
        ("\u{0405}\u{0422}\u{041e}\u{0420}", ALL),
        ("\u{0455}\u{0442}\u{043e}\u{0440}", ALL),
        ("S\u{0336}T\u{0336}O\u{0336}P\u{0336}", ALL),
        ("S\u{0335}T\u{0335}O\u{0335}P\u{0335}", ALL),
        ("🇸🇹🇴🇵", ALL),
        ("🇸 🇹 🇴 🇵", ALL),
        ("𝐒𝐓𝐎𝐏", ALL),
        ("Ⓢⓣⓞⓟ", ALL),
        ("STOOOOP", ALL),
        ("stopppp", ALL),
        ("S\u{200b}T\u{200c}O\u{200d}P", ALL),
        ("ｕｎｓｕｂｓｃｒｉｂｅ", ALL),
        // [ISSUE] ordinary English inside a sentence.
        ("Hi, please remove me from your list", ALL),
        ("Hi please remove me from your list", ALL),
        ("Remove my number", ALL),
        ("remove my number from your list please", ALL),
        ("Please remove this number", ALL),
        ("no more texts", TEXTS),
        ("No more texts please", TEXTS),
        ("no more calls", CALLS),
        ("no more emails", EMAILS),
        ("No more messages", ALL),
        ("opt me out", ALL),
        ("Please opt me out of everything", ALL),
        ("unsub", ALL),
        ("Unsub pls", ALL),
        ("unsubcribe", ALL),
        ("unsubscibe", ALL),
        ("unsuscribe", ALL),
        ("Lose my number", ALL),
        ("lose this number please", ALL),
        ("don't message me", ALL),
        ("Don't message me again", ALL),
        ("Take me off your list", ALL),
        ("take me off", ALL),
        ("Delete my number", ALL),
        ("Leave me alone", ALL),
        ("I told you already, leave me alone", ALL),
        ("Go away", ALL),
        ("Do not contact me", ALL),
        ("dont contact me again", ALL),
        ("Stop contacting me", ALL),
        ("Please stop messaging me", ALL),
        ("Stop sending me texts", TEXTS),
        ("Sorry, wrong number", ALL),
        ("You have the wrong number", ALL),
        ("Wrong number, this is Bob", ALL),
        ("Who is this? Stop", ALL),
        ("who is this?? STOP", ALL),
        ("Can you remove me from your list?", ALL),
        ("Could you please take me off your list?", ALL),
        ("Hi Sam,\n\nPlease remove me from your list.", ALL),
        ("Stop bothering me", ALL),
        ("quit spamming me", ALL),
        ("Remove me from all your lists", ALL),
        ("Please remove me from your mailing list", ALL),
        // [FCC] "any reasonable means": refusals that name a channel.
        ("Don't call me, text me", CALLS),
        ("Don't call me. Text me instead", CALLS),
        ("Please don't call me, just text", CALLS),
        ("Do not call me", CALLS),
        ("do not call me again", CALLS),
        ("Stop calling me", CALLS),
        ("please stop calling", CALLS),
        ("stop calling this number", CALLS),
        ("Never call me again", CALLS),
        ("No calls please", CALLS),
        ("Stop with the calls", CALLS),
        ("stop texting", TEXTS),
        ("Stop texting me please", TEXTS),
        ("Don't text me", TEXTS),
        ("do not text this number", TEXTS),
        ("Stop emailing me", EMAILS),
        ("Don't email me", EMAILS),
        (
            "stop calling and texting me",
            Label::Definite(Named {
                calls: true,
                texts: true,
                emails: false,
            }),
        ),
        (
            "don't call or text me",
            Label::Definite(Named {
                calls: true,
                texts: true,
                emails: false,
            }),
        ),
        ("Stop texting me, call me instead", TEXTS),
        ("Stop texting me. Stop.", ALL),
        // [ES] Spanish.
        ("ALTO", ALL),
        ("Alto", ALL),
        ("PARAR", ALL),
        ("CANCELAR", ALL),
        ("BAJA", ALL),
        ("baja por favor", ALL),
        ("Darme de baja", ALL),
        ("No más mensajes", ALL),
        ("no mas mensajes por favor", ALL),
        ("No más", ALL),
        ("No me llames", CALLS),
        ("no me llamen más", CALLS),
        ("Dejen de llamarme", CALLS),
        ("No me escriban", ALL),
        ("Número equivocado", ALL),
        ("Alto ya", ALL),
        ("¿Quién es? Alto", ALL),
        ("Déjenme en paz", ALL),
        ("detener", ALL),
        // [FR] French.
        ("Arrêt", ALL),
        ("ARRET", ALL),
        ("arrêter", ALL),
        ("Désabonner", ALL),
        ("désabonnement svp", ALL),
        ("Désinscrire", ALL),
        ("STOP svp", ALL),
        ("Ne m'appelez plus", CALLS),
        ("Plus de SMS", TEXTS),
        ("Laissez-moi tranquille", ALL),
        ("Mauvais numéro", ALL),
        // [ISSUE] not opt-outs: noun phrases, scheduling, a question denied.
        ("Take me off the grid!", Nothing),
        ("Do not call before 5pm please", Nothing),
        ("Don't call before 5pm", Nothing),
        ("don't call me before noon", Nothing),
        ("Please do not call me at work", Nothing),
        ("Remove me from the 9am slot and book 3pm", Nothing),
        ("Wrong number? No, this is Ana, go ahead", Nothing),
        ("No calls after 6pm", Nothing),
        ("Don't text me after 9pm", Nothing),
        ("please don't stop texting me", Nothing),
        ("Don't remove me from the list", Nothing),
        ("Please don't unsubscribe me", Nothing),
        (
            "take me off the waitlist for Tuesday and put me on Thursday",
            Nothing,
        ),
        ("I have no more questions", Nothing),
        ("No, call me tomorrow", Nothing),
        ("no contact info yet", Nothing),
        // [SPEC] possible: a per-se word inside a longer sentence.
        (
            "how do I unsubscribe from the newsletter but keep texts",
            Held,
        ),
        ("I want to quit my gym, can you help", Held),
        ("Can you stop sending these on weekends", Held),
        ("If you don't stop I will report you", Held),
        ("Stop calling before 9am", Held),
        ("I might cancel if the price is too high", Held),
        ("Wrong number?", Held),
        ("Is this the wrong number?", Held),
        ("Did you remove me from your list?", Held),
        ("We should end the call early", Held),
        // [ORD] ordinary replies.
        ("Yes, Tuesday works", Nothing),
        ("What's the price?", Nothing),
        ("", Nothing),
        ("!!!", Nothing),
        ("the stop sign by the office", Nothing),
        ("Can you call me tomorrow?", Nothing),
        ("Sounds good", Nothing),
        ("Call me at 3", Nothing),
        ("Text me the address", Nothing),
        ("Please email me the quote", Nothing),
        ("I'm interested, tell me more", Nothing),
        ("Who is this?", Nothing),
        ("Who is this", Nothing),
        ("Thanks!", Nothing),
        ("ok", Nothing),
        ("Yes please", Nothing),
        ("I'll stop by the office tomorrow", Nothing),
        ("At the end of the month works", Nothing),
        ("Cancel my appointment", Nothing),
        ("I need to cancel the meeting", Nothing),
        ("What's the end date?", Nothing),
        ("The bus stop is right there", Nothing),
        ("Don't stop, this is great", Nothing),
        ("Never mind, it's fine", Nothing),
        ("Is it too late to book?", Nothing),
        ("Hola, ¿cuánto cuesta?", Nothing),
        ("Bonjour, je suis intéressé", Nothing),
        ("El precio es muy alto para mí", Nothing),
        ("Remove the old address and use the new one", Nothing),
        ("Please subscribe me to the newsletter", Nothing),
        ("My email is ana@example.com", Nothing),
        ("Call me after 5pm", Nothing),
        ("No thanks, not right now", Nothing),
        ("Not interested", Nothing),
        ("I'm at work, text me later", Nothing),
        ("See you at 9am", Nothing),
        ("Can we reschedule?", Nothing),
        ("R", Nothing),
        ("C", Nothing),
        ("I texted you yesterday", Nothing),
        ("You never call me back", Nothing),
        ("I got no texts", Nothing),
        ("I received no emails from you", Nothing),
        ("I don't text, call me instead", Nothing),
        ("The pain won't go away", Nothing),
        ("I gave you the wrong number, it's 555-0100", Nothing),
        // ... and the same words that are refusals.
        ("I think you have the wrong number", ALL),
        ("Please never call me again", CALLS),
        ("Just go away", ALL),
        ("No texts please", TEXTS),
    ];

    fn label_of(reading: Reading) -> Label {
        match reading {
            Reading::Definite(named) => Label::Definite(named),
            Reading::Possible => Held,
            Reading::Nothing => Nothing,
        }
    }

    fn kind(label: Label) -> &'static str {
        match label {
            Label::Definite(_) => "definite",
            Held => "held",
            Nothing => "nothing",
        }
    }

    /// Every labelled message reads as labelled. Run with `--nocapture` for the counts
    /// per label (definite / held / nothing) the reading gave.
    #[test]
    fn the_labelled_messages_read_as_labelled() {
        assert!(TABLE.len() >= 200, "{} messages", TABLE.len());
        let mut wrong = Vec::new();
        let mut counts: Vec<(&str, [usize; 3])> =
            vec![("definite", [0; 3]), ("held", [0; 3]), ("nothing", [0; 3])];
        for (text, label) in TABLE {
            let got = label_of(read(text, &[]));
            if got != *label {
                wrong.push(format!("{text:?}: {label:?}, read {got:?}"));
            }
            let row = counts
                .iter_mut()
                .find(|(k, _)| *k == kind(*label))
                .map(|(_, c)| c);
            if let Some(row) = row {
                row[match got {
                    Label::Definite(_) => 0,
                    Held => 1,
                    Nothing => 2,
                }] += 1;
            }
        }
        println!(
            "{} labelled messages; label: read definite / held / nothing",
            TABLE.len()
        );
        for (label, [d, h, n]) in &counts {
            println!("{label}: {d} / {h} / {n}");
        }
        assert!(
            wrong.is_empty(),
            "{} read wrong:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }
}

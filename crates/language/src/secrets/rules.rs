//! The rules: what each kind of secret looks like, as data. A rule is a pattern, the
//! part of a match that is the secret (the group `secret`, else the whole match) and a
//! check that the part really is one (a checksum, an issuer's prefix, randomness).
//! They run in this order, each on the text the ones before it left: the larger shapes
//! (a key block, a URL, an IBAN) go before the digit runs inside them.

use super::checks;

pub struct Rule {
    pub kind: &'static str,
    pub pattern: &'static str,
    /// The span of the candidate secret that is secret, or `None` when it is not one;
    /// given the candidate and the words just before it.
    pub check: fn(&str, &str) -> Option<(usize, usize)>,
}

/// Each kind once, with the marker that replaces it.
pub const LABELS: &[(&str, &str)] = &[
    ("private_key", "[private key]"),
    ("connection_string", "[connection secret]"),
    ("token", "[token]"),
    ("api_key", "[api key]"),
    ("iban", "[iban]"),
    ("id_number", "[national id]"),
    ("card_number", "[card number]"),
    ("ssn", "[ssn]"),
    ("passport", "[passport number]"),
    ("password", "[password]"),
    ("secret", "[secret]"),
    ("phone", "[phone]"),
    ("email", "[email]"),
];

fn whole(ok: fn(&str) -> bool) -> impl Fn(&str) -> Option<(usize, usize)> {
    move |s| ok(s).then_some((0, s.len()))
}

macro_rules! whole {
    ($check:path) => {
        |s: &str, _: &str| whole($check)(s)
    };
}

/// Words that follow "password is" without being one.
const NOT_A_PASSWORD: &[&str] = &[
    "wrong",
    "incorrect",
    "invalid",
    "expired",
    "required",
    "missing",
    "reset",
    "changed",
    "correct",
    "weak",
    "strong",
    "same",
    "different",
    "too",
    "not",
    "the",
    "a",
    "an",
    "still",
    "now",
    "case-sensitive",
    "empty",
    "saved",
    "stored",
    "somewhere",
    "written",
    "on",
    "in",
    "ok",
    "fine",
    "locked",
    "long",
    "short",
    "new",
    "old",
];

/// The value after "password is": all of it but a full stop that ends the sentence,
/// unless it is a word that only describes the password.
fn password_value(s: &str, _: &str) -> Option<(usize, usize)> {
    let value = s.strip_suffix('.').unwrap_or(s);
    let bare = value.trim_end_matches(['!', '?', ')', '"', '\'']);
    let plain = bare.chars().all(|c| c.is_ascii_lowercase() || c == '-');
    let described = plain && NOT_A_PASSWORD.contains(&bare);
    (!bare.is_empty() && !described).then_some((0, value.len()))
}

fn chosen_password(s: &str, _: &str) -> Option<(usize, usize)> {
    checks::chosen(s).then_some((0, s.len()))
}

/// After an everyday name ("pass", "pw", "login"), a value that mixes letters with digits
/// or symbols (not an address or a link), a full stop that ends the sentence aside; after
/// "login", which also names user names ("jsmith42"), one with a symbol or a capital too.
fn mixed_password(s: &str, before: &str) -> Option<(usize, usize)> {
    let value = s.trim_end_matches(['.', '!', '?', ')', '"', '\'']);
    let address = value.split_once('@').is_some_and(|(_, domain)| domain.contains('.'));
    let link = address || value.contains("://");
    let login = before.to_lowercase().contains("log");
    let strong = value.chars().any(|c| c.is_ascii_punctuation() && !matches!(c, '.' | '_' | '-'))
        || value.chars().skip(1).any(char::is_uppercase);
    (checks::mixed(value) && !link && (!login || strong)).then_some((0, value.len()))
}

/// "social" in words that name something else: the value after them is not an SSN.
static SOCIAL_ELSE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)^\s*(?:media|worker|workers|services?|club|event|life|network|skills|studies|circle|hour|care|housing|science|enterprise|justice|security)\b")
        .expect("a valid pattern")
});

/// After the everyday "social", a value unless the word after it names something else
/// ("my social worker's case number is …").
fn everyday_social(s: &str, before: &str) -> Option<(usize, usize)> {
    let lower = before.to_lowercase();
    let named_else = lower.rfind("social").is_some_and(|at| SOCIAL_ELSE.is_match(&lower[at + "social".len()..]));
    (!named_else && checks::ssn(s)).then_some((0, s.len()))
}

/// A named card number: 12 to 19 digits, whatever its checksum.
fn card_length(s: &str) -> bool {
    (12..=19).contains(&s.chars().filter(char::is_ascii_digit).count())
}

/// At least four digits: an identifier, not a word.
fn id_like(s: &str) -> bool {
    s.chars().filter(char::is_ascii_digit).count() >= 4
}

/// Words that make a long number a reference, not a card, unless a card is named too.
static REFERENCE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)order|tracking|invoice|ticket|booking|reference|\bref\b|parcel|shipment|confirmation|订单|快递|运单|单号|编号")
        .expect("a valid pattern")
});
static CARD_WORD: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)card|visa|master|amex|discover|jcb|卡").expect("a valid pattern")
});

/// The longest run of whole digit groups in `s` that is a card number, unless the words
/// before it call it a reference.
fn card_within(s: &str, before: &str) -> Option<(usize, usize)> {
    if REFERENCE.is_match(before) && !CARD_WORD.is_match(before) {
        return None;
    }
    let groups: Vec<(usize, usize)> = {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in s.char_indices() {
            match (c.is_ascii_digit(), start) {
                (true, None) => start = Some(i),
                (false, Some(b)) => {
                    out.push((b, i));
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(b) = start {
            out.push((b, s.len()));
        }
        out
    };
    let mut best: Option<(usize, usize)> = None;
    for first in 0..groups.len() {
        for last in first..groups.len() {
            let (from, to) = (groups[first].0, groups[last].1);
            if checks::card(&s[from..to]) && best.is_none_or(|(a, b)| to - from > b - a) {
                best = Some((from, to));
            }
        }
    }
    best
}

/// What may stand between a name and its value: "for" and up to four words ("the pin
/// for my Wells Fargo debit card is …"), and an aside between commas ("my passport
/// number, for the booking, is …").
macro_rules! aside {
    () => {
        r"(?:\s+(?:for|to|of|on|at)\s+(?:the\s+|my\s+|our\s+)?[A-Za-z0-9'-]{1,20}(?:\s+[A-Za-z0-9'-]{1,20}){0,3})?(?:,[^,:\n]{1,40}?,?)?"
    };
}

/// What joins a value to the name after it, within a short window: a dash, or "is", "=",
/// "that's", "that one's" (after a colon or a comma too), then "my", "the" or the like.
macro_rules! link {
    () => {
        r"\s*(?:(?:[—–]|\s-)\s*(?:(?:(?:that|this|it)(?:\s+one)?(?:'s|’s|\s+is|\s+was)|is|was|as|=)\s+)?|(?:[:,]\s*)?(?:(?:that|this|it)(?:\s+one)?(?:'s|’s|\s+is|\s+was)|is|was|as|=)\s+)(?:my|our|the|his|her|their)?\s*"
    };
}

pub static RULES: &[Rule] = &[
    Rule {
        kind: "private_key",
        pattern: r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)",
        check: whole!(checks::any),
    },
    Rule {
        kind: "connection_string",
        pattern: r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{0,64}:(?P<secret>[^\s@/]{1,128})@",
        check: whole!(checks::any),
    },
    Rule {
        kind: "connection_string",
        pattern: r"(?i)\b(?:AccountKey|SharedAccessKey|SharedAccessSignature|Password|Pwd)=(?P<secret>[^;\s'\x22]+)",
        check: whole!(checks::any),
    },
    Rule {
        kind: "token",
        pattern: r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/]+",
        check: whole!(checks::any),
    },
    Rule { kind: "token", pattern: r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})", check: whole!(checks::any) },
    Rule {
        kind: "api_key",
        pattern: r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,}|\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{12,}|\bwhsec_[A-Za-z0-9]{20,}|\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{30,}|\bglpat-[A-Za-z0-9_-]{20,}|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bxapp-[0-9]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{35}|\bhf_[A-Za-z0-9]{30,}|\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|\bnpm_[A-Za-z0-9]{36}",
        check: whole!(checks::any),
    },
    Rule {
        kind: "iban",
        pattern: r"\b(?P<secret>[A-Z]{2}\d{2}(?:[ ./-]?[A-Z0-9]{4}){2,7}(?:[ ./-]?[A-Z0-9]{1,3})?)\b",
        check: whole!(checks::iban),
    },
    Rule {
        kind: "id_number",
        pattern: r"(?:^|[^0-9A-Za-z])(?P<secret>\d{17}[\dXx])(?:[^0-9A-Za-z]|$)",
        check: whole!(checks::china_id),
    },
    Rule {
        kind: "id_number",
        pattern: r"(?i)(?:\b(?:national id(?: number)?|id number|identity (?:card |document )?number|personal id(?: number)?|DNI|NIE|NIF|BSN|NINO|national insurance number|aadhaar(?: number)?|personalausweis(?:nummer)?|codice fiscale|tax id(?: number)?)\b|身份证(?:号码|号)?|证件号(?:码)?|社保(?:卡)?号(?:码)?|社会保障号(?:码)?)\s*(?:#|no\.?|number)?\s*(?:is|was|:|：|=|是|为)?\s*(?P<secret>[A-Z0-9]{2,20}(?:[ -]\d{2,8}){0,4})",
        check: whole!(id_like),
    },
    Rule {
        kind: "card_number",
        pattern: r"(?:^|[^0-9])(?P<secret>\d(?:[ -]?\d){12,30}|\d{4}(?:\.\d{4}){2}\.\d{4}(?:\.\d{3})?|\d{4}\.\d{6}\.\d{5}|\d{4}(?:/\d{4}){2}/\d{4}(?:/\d{3})?|\d{4}/\d{6}/\d{5})(?:[^0-9]|$)",
        check: card_within,
    },
    Rule {
        kind: "card_number",
        pattern: r"(?i)(?:\b(?:card|visa|mastercard|amex)\s*(?:number|no\.?|#|num)|卡号(?:码)?)\s*(?:is|was|:|：|=|是|为|[—–-])?\s*(?P<secret>\d(?:[ ./-]?\d){11,22})(?:[^0-9]|$)",
        check: whole!(card_length),
    },
    Rule {
        kind: "ssn",
        pattern: r"(?i)(?:\b(?:ssn|social security(?: number| no\.?| #)?)(?:\b|\s)|社会安全号(?:码)?)(?:[^\n]{0,25}?[^0-9])?(?P<secret>\d{3}[ ./-]?\d{2}[ ./-]?\d{4})(?:[^0-9]|$)",
        check: whole!(checks::ssn),
    },
    Rule {
        kind: "ssn",
        pattern: r"(?i)\bsocial(?:\s+(?:number|no\.?|#))?[^\n]{0,25}?\s*(?:\b(?:is|was|reads)\b|:|#|=|[—–]|\s-)\s*(?P<secret>\d{3}[ ./-]?\d{2}[ ./-]?\d{4})(?:[^0-9]|$)",
        check: everyday_social,
    },
    Rule {
        kind: "ssn",
        pattern: concat!(
            r"(?i)(?:^|[^0-9])(?P<secret>\d{3}[ ./-]?\d{2}[ ./-]?\d{4})",
            link!(),
            r"(?:[A-Za-z0-9'-]+\s+){0,2}?(?:ssn|social(?:\s+security)?)\b"
        ),
        check: whole!(checks::ssn),
    },
    Rule {
        kind: "passport",
        pattern: concat!(
            r"(?i)(?:\bpassport\b(?:\s+(?:number|no\.?|#|num))?|护照(?:号码|号)?)",
            aside!(),
            r"[^A-Za-z0-9]{0,12}(?:is\s+|was\s+|是|为)?(?P<secret>(?-i:[A-Z0-9]{6,10}))(?:[^A-Za-z0-9]|$)"
        ),
        check: whole!(id_like),
    },
    Rule {
        kind: "passport",
        pattern: concat!(
            r"(?i)(?:^|[^A-Za-z0-9])(?P<secret>(?-i:[A-Z0-9]{6,10}))(?:",
            link!(),
            r"(?:[A-Za-z0-9'-]+\s+){0,2}?passport\b|\s*(?:[—–，,:：-]\s*)?(?:这(?:个)?(?:就)?是|就是|是|为)(?:我|我们)?的?护照)"
        ),
        check: whole!(id_like),
    },
    Rule {
        kind: "password",
        pattern: concat!(
            r"(?i)(?:(?-u:\b)(?:password|passwd|passphrase|pass phrase|passcode|pwd|pin(?: code| number)?|wi-?fi (?:key|code))\b",
            aside!(),
            r"\s*(?:is now|is still|is|was|changed to|set to|:|=>|=|[—–]|\s-)\s*|(?:支付密码|登录密码|密码|口令|PIN码|(?-u:\b)pin)\s*(?:是|为|:|：|=|[—–]|-\s|改成了?|设成了?|换成了?)\s*)(?P<secret>[^\s，。,;；、]+)"
        ),
        check: password_value,
    },
    Rule {
        kind: "password",
        pattern: r"(?i)\b(?:password|passphrase|passcode|pwd|pin)\b[^\n.!]{0,30}?[?:;,]\s*(?:it's|it’s|it is|that's|that’s)\s+(?P<secret>[^\s，。,;；、]+)",
        check: chosen_password,
    },
    Rule {
        kind: "password",
        pattern: concat!(
            r"(?i)(?-u:\b)(?:pw|pass|login|log-in)\b",
            aside!(),
            r"\s*(?:is now|is|was|:|=|[—–]|\s-)\s*(?P<secret>[^\s，。,;；、]+)"
        ),
        check: mixed_password,
    },
    Rule {
        kind: "password",
        pattern: concat!(
            r"(?i)(?:\b(?:card|account|debit|credit|bank|atm)\s+(?:pin|code)\b|\b(?:cvv|cvc|security code)\b|\b(?:pin|code)\s+(?:for|of|on|to)\s+(?:the\s+|my\s+|our\s+)?(?:[A-Za-z0-9'-]+\s+){0,3}?(?:card|account|visa|mastercard|amex|debit)\b)",
            r"(?:,[^,:\n]{1,40}?,?)?\s*(?:is|was|:|：|=|是|[—–]|\s-)\s*(?P<secret>\d{3,8})(?:[^0-9]|$)"
        ),
        check: whole!(checks::any),
    },
    Rule {
        kind: "password",
        pattern: r"(?i)\b(?:pin|pin code|pin number|passcode)\s*(?P<secret>\d{4,8})(?:[^0-9]|$)",
        check: whole!(checks::any),
    },
    Rule {
        kind: "password",
        pattern: r"(?i)\b(?:changed|set|updated|reset)\b[^.\n]{0,30}\b(?:password|passphrase|passcode|pin)\s+to\s+(?P<secret>[^\s，。,;；]+)",
        check: password_value,
    },
    Rule {
        kind: "password",
        pattern: concat!(
            r"(?i)(?:^|[\s\x22'(])(?P<secret>[^\s\x22'(),]{4,64}?)[,.]?",
            link!(),
            r"(?:[A-Za-z0-9-]+\s+){0,2}?(?:password|passphrase|passcode|pwd)\b"
        ),
        check: chosen_password,
    },
    Rule {
        kind: "password",
        pattern: concat!(
            r"(?i)(?:^|[\s\x22'(])(?P<secret>[^\s\x22'(),]{5,64}?)[,.]?",
            link!(),
            r"(?:[A-Za-z0-9-]+\s+){0,2}?(?:pw|pass|login|log-in)\b"
        ),
        check: mixed_password,
    },
    Rule {
        kind: "password",
        pattern: concat!(
            r"(?i)(?:^|[^0-9])(?P<secret>\d{4,8})",
            link!(),
            r"(?:(?:[A-Za-z0-9'-]+\s+){0,2}?(?:pin|pin code|pin number)\b|(?:[A-Za-z0-9'-]+\s+){0,2}?(?:card|account|debit|credit|visa|bank|atm)[\w'-]*\s+(?:pin|code)\b|(?:pin|code)\s+(?:for|of|on|to)\s+(?:the\s+|my\s+|our\s+)?(?:[A-Za-z0-9'-]+\s+){0,2}?(?:card|account|debit|credit|visa|mastercard|amex|bank|atm))"
        ),
        check: whole!(checks::any),
    },
    Rule {
        kind: "password",
        pattern: r"(?i)(?P<secret>[A-Za-z0-9!@#$%^&*_.+-]{4,64})\s*(?:[—–，,:：-]\s*)?(?:这(?:个)?(?:就)?是|就是|是|为)(?:我|我们)的?[^\s，。]{0,8}?(?:密码|口令|pin码?)",
        check: chosen_password,
    },
    Rule {
        kind: "secret",
        pattern: r"(?i)(?:\b(?:aws_secret_access_key|secret_access_key|secret[_ ]?key|client[_ ]?secret|api[_ -]?key|access[_ -]?key|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token|private_key_id|secret|token|credentials?)\b|密钥|秘钥|令牌)(?:\s+(?:for|to|of|on)\s+(?:the\s+|my\s+|our\s+)?[\w'-]{1,20}(?:\s+[\w'-]{1,20})?)?[\x22']?\s*(?:[:=]|=>|\bis\b|是|为|：)\s*[\x22']?(?P<secret>[A-Za-z0-9+/=_.-]{12,})",
        check: whole!(checks::random_looking),
    },
    Rule { kind: "phone", pattern: r"(?:^|[^0-9])(?P<secret>\+?\d[\d ().-]{7,}\d)(?:[^0-9]|$)", check: whole!(phone) },
    Rule {
        kind: "email",
        pattern: r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
        check: whole!(checks::any),
    },
];

/// A phone number has at least 9 digits (a date like 2024-01-15 has 8).
fn phone(s: &str) -> bool {
    s.chars().filter(char::is_ascii_digit).count() >= 9
}

//! Sentence in, what stays out: the rules on the wording they were written on. The
//! end-to-end corpus, in other wording, is `tests/api/secrets.rs`.

use super::*;

/// (sentence, the secret in it, its kind)
const FOUND: &[(&str, &str, &str)] = &[
    ("my AWS key is AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "api_key"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "secret",
    ),
    ("use sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv for Claude", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv", "api_key"),
    ("token ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ", "ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ", "api_key"),
    ("stripe: sk_live_51HxQeR2eZvKYlo2C0aBcDeFg", "sk_live_51HxQeR2eZvKYlo2C0aBcDeFg", "api_key"),
    ("Authorization: Bearer abc123DEF456ghi789JKL", "abc123DEF456ghi789JKL", "token"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9",
        "token",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
        "private_key",
    ),
    ("DATABASE_URL=postgres://admin:S3cretPw@db.internal:5432/app", "S3cretPw", "connection_string"),
    (
        "AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=core.windows.net",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==",
        "connection_string",
    ),
    ("hunter2Zebra is my password for the VPN", "hunter2Zebra", "password"),
    ("The wifi passphrase: Correct-Horse-Battery-9", "Correct-Horse-Battery-9", "password"),
    ("my PIN is 4821", "4821", "password"),
    ("我的银行卡密码是731946", "731946", "password"),
    ("Amex 3782 822463 10005 exp 04/29", "3782 822463 10005", "card_number"),
    ("card 4556-7375-8689-9855", "4556-7375-8689-9855", "card_number"),
    ("IBAN DE89 3704 0044 0532 0130 00 please", "DE89 3704 0044 0532 0130 00", "iban"),
    ("SSN 078051120 for the form", "078051120", "ssn"),
    ("her social security number: 078-05-1120", "078-05-1120", "ssn"),
    ("passport number X1234567", "X1234567", "passport"),
    ("身份证号码：110101199003074477", "110101199003074477", "id_number"),
    // Named the way people name them: before or after the value, across a dash, a colon
    // or "that's my", and digit groups across any separator.
    ("for the form my social is 219099999", "219099999", "ssn"),
    ("078-05-1120 - that's my social", "078-05-1120", "ssn"),
    ("social # 078.05.1120", "078.05.1120", "ssn"),
    ("the social on my W-2 reads 078 05 1120", "078 05 1120", "ssn"),
    ("Tr0ub4dor&3x — that's the password for the router", "Tr0ub4dor&3x", "password"),
    ("pay with 4539.1488.0343.6467 please", "4539.1488.0343.6467", "card_number"),
    ("card 4539/1488/0343/6467 for the deposit", "4539/1488/0343/6467", "card_number"),
    ("pw for the printer: Kettle-99", "Kettle-99", "password"),
    ("Lantern_7 is my login at the library", "Lantern_7", "password"),
    ("the pin for my savings card is 0719", "0719", "password"),
    ("2288 is the code for my bank card", "2288", "password"),
    ("IBAN DE89-3704-0044-0532-0130-00", "DE89-3704-0044-0532-0130-00", "iban"),
    ("社保号：11010519491231002X", "11010519491231002X", "id_number"),
    ("卡号 6222 0000 1111 2222 333", "6222 0000 1111 2222 333", "card_number"),
    ("QW8!zk 是我的邮箱密码", "QW8!zk", "password"),
    ("E48213976 — that's my passport", "E48213976", "passport"),
];

/// Sentences that hold no secret and must come back unchanged.
const KEPT: &[&str] = &[
    "order #4002-8911-2231 ships tomorrow",
    "we upgraded to version 2.14.3 on 2024-05-17",
    "password reset link sent to you",
    "my password is wrong again",
    "tracking code 1Z999AA10123456784",
    "the meeting is at 10:30, room 4B",
    "This is my password manager of choice",
    "SKU 840-19-2277 is back in stock",
    "order 4111 1111 1111 1111 was refunded",
    "the social is at 7pm on Friday",
    "my bus pass is valid until June",
    "the login page shows error 502",
    "the code review for PR 4410 is done",
    "the server is at 192.168.10.254",
    "released 2025.11.03 as build 7",
    "my pass — maria.k — still works",
    "2024 was the year my pass expired",
    "密码错误三次就锁了",
    "PIN-compatible board revision 3 arrived",
    "Our lease runs 4/1/2024-4/30/2024",
    "In 2023, password managers got better",
    "Wi-Fi: password is on the sticker",
    "Since v2.0, password hashing is slower",
    "My login is ann.lee",
    "My login is jsmith42",
    "Login: https://portal.example.com/sso",
    "After v2.3.1, login is much faster",
    "The treatment code is 99213",
    "My visa application code is 4821",
    "The bank's ZIP code is 94105",
    "the credit card reader showed error code: 502",
    "In 2019, the pin factory closed",
    "Meet me at 1530, the pin on the map is the cafe",
    "My social worker's case number is 123456789",
    "Our social media ad, order 123456789",
    "Flight BA2490, passport control took an hour",
    "my password is [password]",
];

#[test]
fn every_kind_is_found_and_replaced_by_its_own_marker() {
    for (sentence, secret, kind) in FOUND {
        // Without phone numbers: a nine-digit value must be found by its own rule.
        let redacted = redact_kinds(sentence, |k| k != "phone");
        assert!(!redacted.contains(secret), "{sentence} -> {redacted}");
        assert!(redacted.contains(label(kind)), "{sentence} -> {redacted}, expected {}", label(kind));
        assert!(sensitive_kinds(sentence).contains(kind), "{sentence}: {:?}", sensitive_kinds(sentence));
    }
}

#[test]
fn look_alikes_stay_as_they_are() {
    for sentence in KEPT {
        assert_eq!(redact_kinds(sentence, |k| k != "phone" && k != "email"), *sentence);
    }
}

#[test]
fn a_marker_is_not_found_again() {
    for marked in ["my password is [password]", "pw: [password]", "密码是[password]", "SSN [ssn]"] {
        assert_eq!(redact_found(marked, |_| true), (marked.to_owned(), vec![]), "{marked}");
    }
}

#[test]
fn the_words_around_a_secret_stay() {
    assert_eq!(redact("my bank password is Qz8#river, ok?"), "my bank password is [password], ok?");
    assert_eq!(redact("IBAN DE89 3704 0044 0532 0130 00"), "IBAN [iban]");
}

#[test]
fn json_strings_are_redacted_at_any_depth_and_secret_keys_whole() {
    let mut value = serde_json::json!({
        "client": {"note": "card 4556 7375 8689 9855", "password": "tulip", "pin": 4821},
        "tags": ["ok", "sk-proj-AbCdEfGhIjKlMnOp"],
        "count": 3
    });
    assert!(redact_json(&mut value, &|_| true));
    let text = value.to_string();
    assert!(!text.contains("4556") && !text.contains("tulip") && !text.contains("4821"), "{text}");
    assert!(!text.contains("AbCdEfGh"), "{text}");
    assert_eq!(value["count"], 3);
}

#[test]
fn sensitive_data_is_found_and_redacted() {
    assert_eq!(sensitive_kinds("mail me at ann.lee@example.com"), ["email"]);
    assert_eq!(sensitive_kinds("my key is sk-abcdefghijklmnop1234"), ["api_key"]);
    assert!(sensitive_kinds("call me on +1 415 555 0199").contains(&"phone"));
    assert!(sensitive_kinds("我的手机号是 13812345678").contains(&"phone"));
    assert!(sensitive_kinds("card 4111 1111 1111 1111").contains(&"card_number"));
    assert_eq!(sensitive_kinds("my password is hunter2"), ["password"]);
    assert!(sensitive_kinds("We run PostgreSQL 18 on 3 nodes since 2024-01-15").is_empty());
    assert_eq!(redact("write to ann@example.com"), "write to [email]");
    assert_eq!(redact("my bank password is Tr0ub4dor&3"), "my bank password is [password]");
    assert_eq!(
        redact("the wifi password for the office is hunter2!"),
        "the wifi password for the office is [password]"
    );
    assert_eq!(redact("我的银行卡密码是 882931，别告诉别人"), "我的银行卡密码是 [password]，别告诉别人");
    assert_eq!(redact("SSN 123-45-6789"), "SSN [ssn]");
    assert_eq!(redact("We're going camping next month."), "We're going camping next month.");
    assert_eq!(redact("My PIN: 4821"), "My PIN: [password]");
    assert_eq!(
        redact_kinds("call +1 415 555 0199, key sk-abcdefghijklmnop1234", |k| k == "api_key"),
        "call +1 415 555 0199, key [api key]"
    );
}

//! The arithmetic that tells a secret from a number that only looks like one: card
//! numbers by Luhn and their issuers' prefixes, IBANs by ISO 7064 mod 97, China's resident
//! id by its check character, US social security numbers by the ranges never issued, and
//! random-looking tokens by their character entropy.

/// Only the digits of `text`: the groups are read across any separator.
fn digits(text: &str) -> Vec<u32> {
    text.chars().filter_map(|c| c.to_digit(10)).collect()
}

/// A payment card number: 13 to 19 digits, a known issuer's prefix, the Luhn checksum.
pub fn card(text: &str) -> bool {
    let d = digits(text);
    if !(13..=19).contains(&d.len()) || d.iter().all(|&x| x == d[0]) {
        return false;
    }
    let prefix = |n: usize| d[..n].iter().fold(0u32, |acc, &x| acc * 10 + x);
    let issuer = match d[0] {
        4 => true,                                                                                        // Visa
        2 => (2221..=2720).contains(&prefix(4)),                                                          // Mastercard
        5 => (51..=55).contains(&prefix(2)),                                                              // Mastercard
        3 => matches!(prefix(2), 34 | 37 | 35 | 36 | 38 | 30), // Amex, JCB, Diners
        6 => prefix(4) == 6011 || prefix(2) == 65 || prefix(2) == 62 || (644..=649).contains(&prefix(3)), // Discover, UnionPay
        _ => false,
    };
    issuer && luhn(&d)
}

fn luhn(d: &[u32]) -> bool {
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| if i % 2 == 1 { if x * 2 > 9 { x * 2 - 9 } else { x * 2 } } else { x })
        .sum();
    sum.is_multiple_of(10)
}

/// An IBAN: two letters, two check digits, 11 to 30 letters and digits, mod 97 = 1.
pub fn iban(text: &str) -> bool {
    let compact: String = text.chars().filter(|c| !matches!(c, ' ' | '.' | '-' | '/')).collect();
    if !(15..=34).contains(&compact.len()) || !compact.chars().all(|c| c.is_ascii_alphanumeric()) {
        return false;
    }
    let (head, tail) = compact.split_at(4);
    let mut remainder = 0u32;
    for c in tail.chars().chain(head.chars()) {
        let value = match c.to_digit(36) {
            Some(v) => v,
            None => return false,
        };
        for digit in value.to_string().chars() {
            remainder = (remainder * 10 + digit.to_digit(10).expect("a digit")) % 97;
        }
    }
    remainder == 1
}

/// China's 18-character resident identity number: its ISO 7064 MOD 11-2 check character.
pub fn china_id(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() != 18 || !chars[..17].iter().all(char::is_ascii_digit) {
        return false;
    }
    const WEIGHTS: [u32; 17] = [7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2];
    let sum: u32 = chars[..17].iter().zip(WEIGHTS).map(|(c, w)| c.to_digit(10).expect("a digit") * w).sum();
    let expected = ['1', '0', 'X', '9', '8', '7', '6', '5', '4', '3', '2'][(sum % 11) as usize];
    chars[17].to_ascii_uppercase() == expected
}

/// A US social security number in a range that is issued (not 000, 666 or 9xx; no zero group or serial).
pub fn ssn(text: &str) -> bool {
    let d = digits(text);
    if d.len() != 9 {
        return false;
    }
    let area = d[0] * 100 + d[1] * 10 + d[2];
    area != 0 && area != 666 && area < 900 && (d[3], d[4]) != (0, 0) && d[5..].iter().any(|&x| x != 0)
}

/// Text that reads as random: letters and digits mixed, and at least 3 bits of entropy
/// per character. Words, dates and version strings fall below.
pub fn random_looking(text: &str) -> bool {
    let has_digit = text.chars().any(|c| c.is_ascii_digit());
    let has_letter = text.chars().any(|c| c.is_ascii_alphabetic());
    has_digit && has_letter && text.len() >= 12 && entropy(text) >= 3.0
}

/// Shannon entropy of `text`'s characters, in bits per character.
pub fn entropy(text: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in text.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = text.chars().count() as f64;
    counts.values().map(|&k| k as f64 / n).map(|p| -p * p.log2()).sum()
}

/// A chosen password rather than an ordinary word: a digit, a symbol, or a capital
/// letter after the first character.
pub fn chosen(text: &str) -> bool {
    text.chars().count() >= 4
        && (text.chars().any(|c| c.is_ascii_digit() || c.is_ascii_punctuation())
            || text.chars().skip(1).any(|c| c.is_uppercase()))
}

/// A value that mixes a letter with a digit or a symbol ("blue-otter-77", "Qx8#mara"):
/// what an everyday name such as "pass" or "login" must be followed by to be a
/// password, and not a user name ("maria.k") or a word.
pub fn mixed(text: &str) -> bool {
    let letters = text.chars().filter(|c| c.is_alphabetic()).count();
    let digits = text.chars().filter(char::is_ascii_digit).count();
    let symbols = text.chars().filter(|c| c.is_ascii_punctuation() && !matches!(c, '.' | '_')).count();
    let user_name = text.chars().all(|c| c.is_ascii_lowercase() || matches!(c, '.' | '_')) && letters > 0;
    text.chars().count() >= 5 && letters > 0 && (digits > 0 || symbols > 0) && !user_name
}

/// Anything: the pattern alone is evidence enough.
pub fn any(_: &str) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_pass_luhn_and_a_known_prefix_and_order_numbers_do_not() {
        for good in ["4556 7375 8689 9855", "3782 822463 10005", "5555555555554444", "6011-1111-1111-1117"] {
            assert!(card(good), "{good}");
        }
        for bad in ["4556 7375 8689 9856", "1234 5678 9012 3456", "0000 0000 0000 0000", "9999888877776666"] {
            assert!(!card(bad), "{bad}");
        }
    }

    #[test]
    fn ibans_pass_mod_97_and_typos_do_not() {
        assert!(iban("DE89 3704 0044 0532 0130 00"));
        assert!(iban("GB82WEST12345698765432"));
        assert!(!iban("DE89 3704 0044 0532 0130 01"));
        assert!(!iban("AB12 3456 7890 1234"));
    }

    #[test]
    fn chinese_ids_carry_their_check_character() {
        assert!(china_id("11010519491231002X"));
        assert!(china_id("110101199003074477"));
        assert!(!china_id("110101199003074478"));
    }

    #[test]
    fn ssns_outside_the_issued_ranges_are_not_ssns() {
        assert!(ssn("078-05-1120"));
        assert!(ssn("219099999"));
        assert!(!ssn("000-12-3456") && !ssn("666-12-3456") && !ssn("912-34-5678") && !ssn("123-00-4567"));
    }

    #[test]
    fn digit_groups_are_read_across_any_separator() {
        assert!(card("4539.1488.0343.6467") && card("4539/1488/0343/6467") && card("4539 1488-0343.6467"));
        assert!(ssn("219.09.9999") && ssn("219/09/9999"));
        assert!(iban("DE89-3704-0044-0532-0130-00") && iban("DE89.3704.0044.0532.0130.00"));
    }

    #[test]
    fn everyday_passwords_mix_letters_with_digits_or_symbols() {
        assert!(mixed("blue-otter-77") && mixed("Qx8#mara") && mixed("X7!kLm29"));
        assert!(!mixed("maria.k") && !mixed("expired") && !mixed("2024") && !mixed("502"));
    }

    #[test]
    fn tokens_read_as_random_and_words_and_versions_do_not() {
        assert!(random_looking("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"));
        assert!(!random_looking("correcthorsebatterystaple"));
        assert!(!random_looking("aaaaaaaa11111111"));
    }
}

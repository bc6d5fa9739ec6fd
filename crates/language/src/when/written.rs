//! Dates as people write them, for the evaluation to read its data and compare answers:
//! "1:56 pm on 8 May, 2023", and a day, month and year in either order.

use std::sync::LazyLock;

use chrono::{DateTime, NaiveDate, Utc};
use regex::Regex;

/// The time a text writes as "1:56 pm on 8 May, 2023".
pub fn spoken_time(text: &str) -> Option<DateTime<Utc>> {
    let re = Regex::new(r"(?i)(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})").ok()?;
    let c = re.captures(text)?;
    let (mut hour, minute): (u32, u32) = (c[1].parse().ok()?, c[2].parse().ok()?);
    if c[3].eq_ignore_ascii_case("pm") && hour < 12 {
        hour += 12;
    } else if c[3].eq_ignore_ascii_case("am") && hour == 12 {
        hour = 0;
    }
    let date = NaiveDate::parse_from_str(&format!("{} {} {}", &c[4], &c[5], &c[6]), "%d %B %Y").ok()?;
    Some(date.and_hms_opt(hour, minute, 0)?.and_utc())
}

/// Lowercase words, a day, month and year as "2 july 2023" whichever way they were
/// written ("July 2nd, 2023", "2July, 2023").
pub fn normalise(text: &str) -> String {
    static MONTH_FIRST: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(r"\b({MONTHS}) (\d{{1,2}})(?:st|nd|rd|th)? (\d{{4}})\b")).expect("a valid pattern")
    });
    static DAY_FIRST: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(&format!(r"\b(\d{{1,2}})(?:st|nd|rd|th)? ?({MONTHS}) (\d{{4}})\b")).expect("a valid pattern")
    });
    const MONTHS: &str = "january|february|march|april|may|june|july|august|september|october|november|december";
    let words = text
        .to_lowercase()
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let words = MONTH_FIRST.replace_all(&words, "$2 $1 $3");
    DAY_FIRST.replace_all(&words, "$1 $2 $3").into_owned()
}

#[cfg(test)]
mod tests {
    use super::{normalise, spoken_time};

    #[test]
    fn a_date_reads_the_same_whichever_way_it_is_written() {
        let cases = [
            ("Oct. 2023!", "oct 2023"),
            ("July 2nd, 2023", "2 july 2023"),
            ("2July, 2023", "2 july 2023"),
            ("on 14 March 2024 at noon", "on 14 march 2024 at noon"),
        ];
        for (text, normal) in cases {
            assert_eq!(normalise(text), normal, "{text}");
        }
    }

    #[test]
    fn a_spoken_time_is_read_in_twelve_hours() {
        let at = |text| spoken_time(text).map(|t| t.to_rfc3339());
        assert_eq!(at("1:56 pm on 8 May, 2023").as_deref(), Some("2023-05-08T13:56:00+00:00"));
        assert_eq!(at("12:09 am on 13 September, 2023").as_deref(), Some("2023-09-13T00:09:00+00:00"));
        assert_eq!(at("sometime in May"), None);
    }
}

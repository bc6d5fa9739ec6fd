//! Time phrases in a query, resolved against the lookup's clock to a window of time.
//! A lookup weights what lies outside the window down (it does not drop it: a phrase is
//! a hint, `since`/`until` are the filter) and also draws raw turns from inside it.
//!
//! Understood, in English and Chinese (case-insensitive; the first phrase found wins):
//!
//! | phrase | window |
//! |---|---|
//! | today, 今天 · yesterday, last night, 昨天, 昨晚 · the day before yesterday, 前天 | that day |
//! | N days / weeks / months / years ago (digits or words: "two days ago", "a week ago"), N天前 / N周前 / N个月前 / N年前 | that day, week, month or year |
//! | this / last week, 本周 / 这周 / 上周 / 上个星期 · this / last / this past weekend, N weekends ago | Monday to Sunday; Saturday and Sunday |
//! | over the weekend | the latest weekend begun |
//! | this / last month, 本月 / 这个月 / 上个月 · this / last year, 今年 / 去年 | that month or year |
//! | this / last spring, summer, autumn (fall), winter | three months from March, June, September, December (the latest ended, or this year's) |
//! | last Monday … last Sunday, last Fri / Tues …, on Monday … (the latest such day before today) | that day |
//! | in the past / last N days / weeks / months, recently (30 days), 最近 | up to now |
//! | a date: 8 May 2023, May 8, 2023, 2023-05-08, 2023年5月8日 | that day |
//! | a month: in May, May 2023, 三月, 5月, 2023年5月 (without a year: the latest one begun) | that month |
//! | a year: in 2022, 2022年 | that year |

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc, Weekday};
use regex::{Regex, RegexSet};
use std::sync::LazyLock;

mod annotate;
mod asked;
pub mod present;
pub mod written;
pub use annotate::annotate;
pub use asked::{asks_when, says_when};

/// A window of time, `[since, until)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

impl Window {
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.since <= at && at < self.until
    }

    /// Whether `[start, end]` overlaps the window.
    pub fn overlaps(&self, start: DateTime<Utc>, end: DateTime<Utc>) -> bool {
        start < self.until && end >= self.since
    }

    /// From `since` up to and including `now`: "recently", "in the past two weeks".
    fn up_to(since: DateTime<Utc>, now: DateTime<Utc>) -> Self {
        Self { since, until: now + Duration::seconds(1) }
    }

    /// Whether the window reaches up to `now` (a phrase like "recently" said then).
    pub fn is_up_to(&self, now: DateTime<Utc>) -> bool {
        self.until == now + Duration::seconds(1)
    }

    fn days(from: NaiveDate, days: i64) -> Self {
        let since = Utc.from_utc_datetime(&from.and_hms_opt(0, 0, 0).expect("midnight exists"));
        Self { since, until: since + Duration::days(days) }
    }

    /// `months` calendar months from the first of `month`.
    fn months(year: i32, month: u32, months: u32) -> Option<Self> {
        let first = NaiveDate::from_ymd_opt(year, month, 1)?;
        let next = first.checked_add_months(chrono::Months::new(months))?;
        Some(Self::days(first, (next - first).num_days()))
    }

    fn month(year: i32, month: u32) -> Option<Self> {
        Self::months(year, month, 1)
    }

    fn year(year: i32) -> Option<Self> {
        let first = NaiveDate::from_ymd_opt(year, 1, 1)?;
        let next = NaiveDate::from_ymd_opt(year + 1, 1, 1)?;
        Some(Self::days(first, (next - first).num_days()))
    }
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

fn month_number(name: &str) -> Option<u32> {
    let name = name.to_lowercase();
    MONTHS.iter().position(|m| name.len() >= 3 && m.starts_with(&name)).map(|i| i as u32 + 1)
}

/// "two", "a", "3", "两", "十二" as a number.
fn number(word: &str) -> Option<i64> {
    const EN: [&str; 13] =
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
    if let Ok(n) = word.parse() {
        return Some(n);
    }
    let lower = word.to_lowercase();
    if lower == "a" || lower == "an" {
        return Some(1);
    }
    if let Some(n) = EN.iter().position(|w| *w == lower) {
        return Some(n as i64);
    }
    chinese_number(word)
}

fn chinese_number(word: &str) -> Option<i64> {
    let digit =
        |c: char| "零一二三四五六七八九".chars().position(|d| d == c).map(|n| n as i64).or((c == '两').then_some(2));
    let chars: Vec<char> = word.chars().collect();
    match chars.as_slice() {
        [c] if *c == '十' => Some(10),
        [c] => digit(*c),
        ['十', d] => Some(10 + digit(*d)?),
        [t, '十'] => Some(10 * digit(*t)?),
        [t, '十', d] => Some(10 * digit(*t)? + digit(*d)?),
        _ => None,
    }
}

/// A weekday by its name or a common short form ("Fri", "Tues"); `None` for any other word.
fn weekday(name: &str) -> Option<Weekday> {
    const SHORT: [&str; 10] = ["mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"];
    let name = name.to_lowercase();
    let full = name.ends_with("day") && name.len() > 5;
    if full || SHORT.contains(&name.as_str()) { name[..3].parse().ok() } else { None }
}

static EN_MONTH: &str = "(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";
static EN_NUMBER: &str = r"(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)";

type Rule = (Regex, fn(&regex::Captures, DateTime<Utc>) -> Option<Window>);

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let re = |pattern: &str| Regex::new(&format!("(?i){pattern}")).expect("a valid pattern");
    let rules: Vec<Rule> = vec![
        // Dates first: they are the most precise.
        (re(r"\b(\d{4})-(\d{2})-(\d{2})\b"), |c, _| {
            Some(Window::days(NaiveDate::from_ymd_opt(c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?)?, 1))
        }),
        (re(&format!(r"\b(\d{{1,2}})(?:st|nd|rd|th)?\s*(?:of\s+)?{EN_MONTH}\b,?\s*(\d{{4}})\b")), |c, _| {
            Some(Window::days(
                NaiveDate::from_ymd_opt(c[3].parse().ok()?, month_number(&c[2])?, c[1].parse().ok()?)?,
                1,
            ))
        }),
        (re(&format!(r"\b{EN_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s*(\d{{4}})\b")), |c, _| {
            Some(Window::days(
                NaiveDate::from_ymd_opt(c[3].parse().ok()?, month_number(&c[1])?, c[2].parse().ok()?)?,
                1,
            ))
        }),
        (re(r"(\d{4})年(\d{1,2})月(\d{1,2})[日号]"), |c, _| {
            Some(Window::days(NaiveDate::from_ymd_opt(c[1].parse().ok()?, c[2].parse().ok()?, c[3].parse().ok()?)?, 1))
        }),
        (re(r"\bthe day before yesterday\b|前天"), |_, now| {
            Some(Window::days(now.date_naive() - Duration::days(2), 1))
        }),
        (re(r"\byesterday\b|\blast night\b|昨天|昨日|昨晚"), |_, now| {
            Some(Window::days(now.date_naive() - Duration::days(1), 1))
        }),
        (re(r"\btoday\b|\btonight\b|\bthis morning\b|今天|今日"), |_, now| Some(Window::days(now.date_naive(), 1))),
        (re(&format!(r"\b{EN_NUMBER}\s+(day|weekend|week|month|year)s?\s+ago\b")), |c, now| {
            ago(number(&c[1])?, &c[2], now)
        }),
        (re(r"([0-9一二三四五六七八九十两]+)\s*(天|周|个?星期|个月|年)前"), |c, now| {
            let unit = match &c[2] {
                "天" => "day",
                "周" | "星期" | "个星期" => "week",
                "个月" => "month",
                _ => "year",
            };
            ago(number(&c[1])?, unit, now)
        }),
        (re(&format!(r"\b(?:in\s+)?the\s+(?:past|last)\s+{EN_NUMBER}\s+(day|week|month)s?\b")), |c, now| {
            let n = number(&c[1])?;
            let days = match &c[2].to_lowercase()[..] {
                "day" => n,
                "week" => 7 * n,
                _ => 30 * n,
            };
            Some(Window::up_to(now - Duration::days(days), now))
        }),
        (re(r"\brecently\b|\blately\b|最近|近来"), |_, now| Some(Window::up_to(now - Duration::days(30), now))),
        (re(r"\b(?:last|(?:this\s+)?past)\s+weekend\b|上周末|上个周末"), |_, now| {
            Some(weekend(now.date_naive(), 1))
        }),
        (re(r"\bthis weekend\b|这个?周末|本周末"), |_, now| Some(weekend(now.date_naive(), 0))),
        // The latest weekend begun: this one on a Saturday or Sunday, else the last.
        (re(r"\bover the weekend\b"), |_, now| {
            let today = now.date_naive();
            Some(weekend(today, i64::from(today.weekday().num_days_from_monday() < 5)))
        }),
        (re(r"\b(last|this)\s+(spring|summer|autumn|fall|winter)\b"), |c, now| {
            season(&c[2], c[1].eq_ignore_ascii_case("last"), now.date_naive())
        }),
        (re(r"\blast week\b|上周|上个?星期|上个?礼拜"), |_, now| Some(week(now.date_naive(), 1))),
        (re(r"\bthis week\b|本周|这周|这个?星期"), |_, now| Some(week(now.date_naive(), 0))),
        (re(r"\blast month\b|上个月|上月"), |_, now| {
            let (y, m) = (now.year(), now.month());
            if m == 1 { Window::month(y - 1, 12) } else { Window::month(y, m - 1) }
        }),
        (re(r"\bthis month\b|本月|这个月"), |_, now| Window::month(now.year(), now.month())),
        (re(r"\blast year\b|去年"), |_, now| Window::year(now.year() - 1)),
        (re(r"\bthis year\b|今年"), |_, now| Window::year(now.year())),
        (
            re(
                r"\b(?:(?:last|on)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday)|last\s+(mon|tues?|wed|thu(?:rs?)?|fri|sat|sun))\b",
            ),
            |c, now| Some(next_weekday(weekday(c.get(1).or(c.get(2))?.as_str())?, now.date_naive(), false)),
        ),
        (re(r"(\d{4})年(\d{1,2})月"), |c, _| Window::month(c[1].parse().ok()?, c[2].parse().ok()?)),
        (re(&format!(r"\b{EN_MONTH},?\s+(\d{{4}})\b")), |c, _| Window::month(c[2].parse().ok()?, month_number(&c[1])?)),
        (re(&format!(r"\b(?:in|during|since|of|early|late|mid)\s+{EN_MONTH}\b")), |c, now| {
            latest_month(month_number(&c[1])?, now)
        }),
        (re(r"([0-9]{1,2}|十[一二]?|[一二三四五六七八九])月(?:份)?"), |c, now| {
            let month = number(&c[1])?;
            latest_month(u32::try_from(month).ok().filter(|m| (1..=12).contains(m))?, now)
        }),
        (re(r"(\d{4})年"), |c, _| Window::year(c[1].parse().ok()?)),
        (re(r"\b(?:in|during|of|since)\s+((?:19|20)\d{2})\b"), |c, _| Window::year(c[1].parse().ok()?)),
    ];
    rules
});

fn ago(n: i64, unit: &str, now: DateTime<Utc>) -> Option<Window> {
    let today = now.date_naive();
    match &unit.to_lowercase()[..] {
        "day" => Some(Window::days(today - Duration::days(n), 1)),
        "week" => Some(week(today, n)),
        "weekend" => Some(weekend(today, n)),
        "month" => {
            let months = now.year() as i64 * 12 + now.month0() as i64 - n;
            Window::month(months.div_euclid(12) as i32, months.rem_euclid(12) as u32 + 1)
        }
        _ => Window::year(now.year() - i32::try_from(n).ok()?),
    }
}

/// The week (Monday to Sunday) `back` weeks before this one (after it when negative).
fn week(today: NaiveDate, back: i64) -> Window {
    Window::days(monday(today) - Duration::weeks(back), 7)
}

/// Saturday and Sunday of the week `back` weeks before this one (after it when negative).
fn weekend(today: NaiveDate, back: i64) -> Window {
    let monday = week(today, back).since.date_naive();
    Window::days(monday + Duration::days(5), 2)
}

/// The first `day` after `from` (`forward`), or the last before it.
fn next_weekday(day: Weekday, from: NaiveDate, forward: bool) -> Window {
    let step = Duration::days(if forward { 1 } else { -1 });
    let mut date = from + step;
    while date.weekday() != day {
        date += step;
    }
    Window::days(date, 1)
}

/// The Monday of `day`'s week.
fn monday(day: NaiveDate) -> NaiveDate {
    day - Duration::days(day.weekday().num_days_from_monday() as i64)
}

/// A season of the northern hemisphere (spring from March, summer from June, autumn from
/// September, winter from December): `last`, the latest one ended before `today`;
/// otherwise this year's (for winter, the one that holds or follows this year's January
/// and February: this winter in January is the one that began in December).
fn season(name: &str, last: bool, today: NaiveDate) -> Option<Window> {
    let first = match &name.to_lowercase()[..] {
        "spring" => 3,
        "summer" => 6,
        "autumn" | "fall" => 9,
        _ => 12,
    };
    let starting = |year: i32| Window::months(year, first, 3);
    let year = today.year();
    if last {
        let this = starting(year)?;
        let ended = |w: &Window| w.until.date_naive() <= today;
        return [this, starting(year - 1)?, starting(year - 2)?].into_iter().find(ended);
    }
    starting(if first == 12 && today.month() <= 2 { year - 1 } else { year })
}

/// The latest month `month` that has begun by `now`.
fn latest_month(month: u32, now: DateTime<Utc>) -> Option<Window> {
    let year = if month <= now.month() { now.year() } else { now.year() - 1 };
    Window::month(year, month)
}

/// The window of the first time phrase in `text`, as of `now`.
pub fn resolve(text: &str, now: DateTime<Utc>) -> Option<Window> {
    find(text, now).map(|(window, _)| window)
}

/// Every rule's pattern in one set: a query without a time phrase, most of them, is
/// told so by one pass over its text rather than a search per rule.
static PHRASES: LazyLock<RegexSet> =
    LazyLock::new(|| RegexSet::new(RULES.iter().map(|(re, _)| re.as_str())).expect("valid patterns"));

/// The first time phrase in `text` with its window as of `now`.
fn find(text: &str, now: DateTime<Utc>) -> Option<(Window, String)> {
    // Telling whether any rule matches is a pass of its own, cheaper than finding which.
    if !PHRASES.is_match(text) {
        return None;
    }
    PHRASES.matches(text).into_iter().find_map(|rule| {
        let (re, resolve) = &RULES[rule];
        let captures = re.captures(text)?;
        Some((resolve(&captures, now)?, captures[0].trim().to_owned()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn window(text: &str) -> Option<(String, String)> {
        // A Wednesday.
        let now = at("2026-06-17T15:00:00Z");
        resolve(text, now)
            .map(|w| (w.since.date_naive().to_string(), (w.until - Duration::seconds(1)).date_naive().to_string()))
    }

    fn is(text: &str, since: &str, until: &str) {
        assert_eq!(window(text), Some((since.to_owned(), until.to_owned())), "{text}");
    }

    #[test]
    fn english_phrases_resolve_against_the_clock() {
        is("what did I do yesterday?", "2026-06-16", "2026-06-16");
        is("two days ago", "2026-06-15", "2026-06-15");
        is("What happened 3 weeks ago", "2026-05-25", "2026-05-31");
        is("last week", "2026-06-08", "2026-06-14");
        is("last weekend", "2026-06-13", "2026-06-14");
        is("what did we decide in May?", "2026-05-01", "2026-05-31");
        is("in September", "2025-09-01", "2025-09-30");
        is("in July 2022", "2022-07-01", "2022-07-31");
        is("on 8 May, 2023", "2023-05-08", "2023-05-08");
        is("What did Audrey eat on October 24, 2023?", "2023-10-24", "2023-10-24");
        is("last month", "2026-05-01", "2026-05-31");
        is("last year", "2025-01-01", "2025-12-31");
        is("in 2022", "2022-01-01", "2022-12-31");
        is("last Monday", "2026-06-15", "2026-06-15");
        is("a month ago", "2026-05-01", "2026-05-31");
        is("last night", "2026-06-16", "2026-06-16");
        is("over the weekend", "2026-06-13", "2026-06-14");
        is("last summer", "2025-06-01", "2025-08-31");
        is("this summer", "2026-06-01", "2026-08-31");
        is("last winter", "2025-12-01", "2026-02-28");
        is("last spring", "2026-03-01", "2026-05-31");
    }

    #[test]
    fn chinese_phrases_resolve_against_the_clock() {
        is("上周我们决定了什么", "2026-06-08", "2026-06-14");
        is("昨天", "2026-06-16", "2026-06-16");
        is("三月的计划", "2026-03-01", "2026-03-31");
        is("十一月", "2025-11-01", "2025-11-30");
        is("三天前", "2026-06-14", "2026-06-14");
        is("2023年5月8日", "2023-05-08", "2023-05-08");
        is("去年", "2025-01-01", "2025-12-31");
    }
}

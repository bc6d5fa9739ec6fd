//! What a relative time phrase in something said meant, for a reader who sees it later:
//! `[Sat 15 July 2023] … last Fri … (last Fri = the Friday before 15 July 2023, Fri 14
//! July 2023)`. Besides the phrases a query understands ([`super`]), what was said may
//! look ahead: tomorrow, next week / weekend / month / year, next Friday, in N days or
//! weeks, 明天, 后天, 下周, 下周末, 下个月, 明年. It may name a day of the month alone ("on
//! the 15th": the latest 15th, or the next one in a sentence about what is to come), and
//! a span that runs up to when it was said says when it began ("I've had them for 3
//! years": since 2020).

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, Duration, Months, NaiveDate, Utc};
use regex::{Regex, RegexSet};

use super::{EN_NUMBER, RULES, Window, find, monday, next_weekday, number, week, weekday, weekend};

type Rule = (Regex, fn(&regex::Captures, NaiveDate) -> Option<Window>);

/// Phrases that look ahead. A lookup does not resolve them (nothing said lies in the
/// future of the lookup's clock); a line that says them is annotated with what they meant.
static AHEAD: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let re = |pattern: &str| Regex::new(&format!("(?i){pattern}")).expect("a valid pattern");
    vec![
        (re(r"\bthe day after tomorrow\b|后天"), |_, today| Some(Window::days(today + Duration::days(2), 1))),
        (re(r"\btomorrow\b|明天|明日"), |_, today| Some(Window::days(today + Duration::days(1), 1))),
        (re(r"\bnext weekend\b|下周末|下个周末"), |_, today| Some(weekend(today, -1))),
        (re(r"\bnext week\b|下周|下个?星期|下个?礼拜"), |_, today| Some(week(today, -1))),
        (re(r"\bnext month\b|下个月"), |_, today| {
            let (y, m) = (today.year(), today.month());
            if m == 12 { Window::month(y + 1, 1) } else { Window::month(y, m + 1) }
        }),
        (re(r"\bnext year\b|明年"), |_, today| Window::year(today.year() + 1)),
        (
            re(
                r"\b(?:next|this coming)\s+(monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\b",
            ),
            |c, today| Some(next_weekday(weekday(&c[1])?, today, true)),
        ),
        // Two or more: "in a day" and "in a week" are more often "per" than "from now".
        (re(&format!(r"\bin\s+{EN_NUMBER}\s+(day|week)s?\b")), |c, today| {
            let n = number(&c[1]).filter(|n| *n >= 2)?;
            Some(if c[2].eq_ignore_ascii_case("day") {
                Window::days(today + Duration::days(n), 1)
            } else {
                week(today, -n)
            })
        }),
    ]
});

/// "On the 15th", and the word after it.
static ON_THE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(on the (\d{1,2})(?:st|nd|rd|th))\b(?:\s+([a-z]+))?").expect("a valid pattern")
});

/// A span: "for 3 years", "seven years now".
static FOR: LazyLock<Regex> = LazyLock::new(|| {
    let span = format!(
        r"(?i)\b(?:for\s+(?:about\s+|almost\s+|nearly\s+|over\s+|the\s+(?:past|last)\s+)?{EN_NUMBER}\s+(year|month|week)s?|{EN_NUMBER}\s+(year|month|week)s?\s+now)\b"
    );
    Regex::new(&span).expect("a valid pattern")
});

/// Every pattern a phrase is found by: a sentence none of them matches (most of them) is
/// passed over in one scan.
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    let asked = RULES.iter().map(|(re, _)| re.as_str());
    let ahead = AHEAD.iter().map(|(re, _)| re.as_str());
    RegexSet::new(asked.chain(ahead).chain([ON_THE.as_str(), FOR.as_str()])).expect("valid patterns")
});

/// For a text said at `said` with relative time phrases ("yesterday", "last week",
/// "三天前", "next Friday"), each phrase and the time it meant, counted from the day it
/// was said where the phrase counts from it: `last Friday = the Friday before 15 July
/// 2023, Fri 14 July 2023`; the first phrase of each sentence, `; `-separated. `None`
/// when the text has no phrase or only absolute ones (a date means itself).
pub fn annotate(text: &str, said: DateTime<Utc>) -> Option<String> {
    if !ANY.is_match(text) {
        return None;
    }
    let mut meant: Vec<String> = Vec::new();
    for sentence in text.split_inclusive(['.', '!', '?', '\n', '。', '！', '？']) {
        if let Some(one) = ANY.is_match(sentence).then(|| in_sentence(sentence, said)).flatten()
            && !meant.contains(&one)
        {
            meant.push(one);
        }
    }
    (!meant.is_empty()).then(|| meant.join("; "))
}

/// The first relative phrase of one sentence and what it meant.
fn in_sentence(sentence: &str, said: DateTime<Utc>) -> Option<String> {
    let today = said.date_naive();
    let (window, phrase) = match find(sentence, said) {
        Some((window, phrase)) => {
            let later = find(sentence, said + Duration::days(400)).map(|(w, _)| w);
            if later == Some(window) {
                return None;
            }
            (coming(&phrase, sentence, today).unwrap_or(window), phrase)
        }
        None => match AHEAD.iter().find_map(|(re, resolve)| {
            let captures = re.captures(sentence)?;
            Some((resolve(&captures, today)?, captures[0].trim().to_owned()))
        }) {
            Some(found) => found,
            None => return day_of_month(sentence, today).or_else(|| lasting(sentence, today)),
        },
    };
    // "Recently" and "in the past weeks" reach up to when they were said: no day to name.
    if window.is_up_to(said) {
        return None;
    }
    Some(format!("{phrase} = {}", meant(&phrase, window, today)))
}

/// "On Sunday" in a text that speaks of what is to come ("on Sunday I am going on a
/// picnic") is the coming Sunday, where a query means the last one.
fn coming(phrase: &str, sentence: &str, today: NaiveDate) -> Option<Window> {
    let day = phrase.to_lowercase().strip_prefix("on ").and_then(weekday)?;
    if !FUTURE.is_match(sentence) {
        return None;
    }
    Some(next_weekday(day, today, true))
}

/// Words of a sentence about what is to come.
static FUTURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:will|won't|shall|gonna|going to|am going|are going|is going|plan(?:ning)? to)\b|\w'll\b")
        .expect("a valid pattern")
});

/// "On the 15th": the latest 15th up to the day it was said, or the next one in a
/// sentence about what is to come. Not an ordinal of something else ("on the 15th
/// floor").
fn day_of_month(sentence: &str, today: NaiveDate) -> Option<String> {
    const NOUNS: &str = "floor century birthday anniversary place time street avenue hole lap round try attempt \
                         page step level day row grade edition episode chapter";
    let captures = ON_THE.captures(sentence)?;
    if captures.get(3).is_some_and(|w| NOUNS.split_whitespace().any(|n| w.as_str().eq_ignore_ascii_case(n))) {
        return None;
    }
    let day: u32 = captures[2].parse().ok().filter(|d| (1..=31).contains(d))?;
    let ahead = FUTURE.is_match(sentence);
    let months = (0..3).map(|n| {
        if ahead { today.checked_add_months(Months::new(n)) } else { today.checked_sub_months(Months::new(n)) }
    });
    let date = months
        .flatten()
        .filter_map(|m| NaiveDate::from_ymd_opt(m.year(), m.month(), day))
        .find(|date| if ahead { *date > today } else { *date <= today })?;
    Some(format!("{} = {}", &captures[1], date.format("%a %-d %B %Y")))
}

/// A span that runs up to when it was said, and when it began: "I've had them for 3
/// years" (since 2020), "I've been playing for a month now" (since February 2022),
/// "seven years now" (since 2016). A span that ended ("we had him for 10 years") is not
/// one: only a sentence in the perfect ("have", "'ve", "has been") or with "now" says so.
fn lasting(sentence: &str, today: NaiveDate) -> Option<String> {
    static PERFECT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?i)\b(?:have|has|been)\b|['’]ve\b|\bnow\b").expect("a valid pattern"));
    let captures = FOR.captures(sentence)?;
    let (n, unit) = match (captures.get(1), captures.get(3)) {
        (Some(n), _) => (number(n.as_str())?, captures.get(2)?.as_str().to_lowercase()),
        (None, Some(n)) => (number(n.as_str())?, captures.get(4)?.as_str().to_lowercase()),
        _ => return None,
    };
    let whole = captures.get(0)?;
    if n == 0 || !PERFECT.is_match(sentence) {
        return None;
    }
    let began = match &unit[..] {
        "year" => format!("{}", today.year() - i32::try_from(n).ok()?),
        "month" => today.checked_sub_months(Months::new(u32::try_from(n).ok()?))?.format("%B %Y").to_string(),
        _ => format!("the week of {}", monday(today - Duration::weeks(n)).format("%a %-d %B %Y")),
    };
    Some(format!("{} = since {began}", whole.as_str().trim()))
}

/// A window described from `today`, the day the phrase was said.
fn meant(phrase: &str, window: Window, today: NaiveDate) -> String {
    let day = |at: NaiveDate| at.format("%a %-d %B %Y").to_string();
    let anchor = today.format("%-d %B %Y");
    let (starts, ends) = (window.since.date_naive(), (window.until - Duration::seconds(1)).date_naive());
    let side = if starts > today { "after" } else { "before" };
    // Whole weeks between the window's week and the week it was said in.
    let weeks = (monday(today) - monday(starts)).num_days().abs() / 7;
    let counted = |unit: &str, units: &str| match weeks {
        0 => format!("the {unit} of {anchor}"),
        1 => format!("the {unit} {side} {anchor}"),
        n => format!("{} {units} {side} {anchor}", count(n)),
    };
    match (ends - starts).num_days() + 1 {
        // "last Friday": which Friday is clearest counted from the day it was said.
        1 if phrase.split_whitespace().last().and_then(weekday).is_some() => {
            format!("the {} {side} {anchor}, {}", starts.format("%A"), day(starts))
        }
        1 => day(starts),
        2 => format!("{}, {} and {}", counted("weekend", "weekends"), day(starts), day(ends)),
        7 => format!("{}, {} to {}", counted("week", "weeks"), day(starts), day(ends)),
        // A calendar month or year; "recently" (the 30 days up to now) is neither.
        28..=31 if starts.day() == 1 && ends.month() == starts.month() => starts.format("%B %Y").to_string(),
        365 | 366 if starts.ordinal() == 1 && ends.year() == starts.year() => starts.format("%Y").to_string(),
        // A season: "the summer of 2022", "the winter of 2022–2023".
        89..=92 if starts.day() == 1 && ends.month() == (starts.month() + 1) % 12 + 1 => {
            let name = ["winter", "spring", "summer", "autumn"][(starts.month() as usize % 12) / 3];
            match ends.year() == starts.year() {
                true => format!("the {name} of {}", starts.year()),
                false => format!("the {name} of {}–{}", starts.year(), ends.year()),
            }
        }
        _ => format!("from {} to {}", day(starts), day(ends)),
    }
}

/// A count as a word, as a phrase says it: "two weeks before".
fn count(n: i64) -> String {
    const WORDS: [&str; 13] =
        ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
    usize::try_from(n).ok().and_then(|n| WORDS.get(n)).map_or_else(|| n.to_string(), |w| (*w).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn said(text: &str, on: &str) -> Option<String> {
        annotate(text, at(&format!("{on}T10:00:00Z")))
    }

    #[test]
    fn a_phrase_looking_back_is_counted_from_the_day_it_was_said() {
        assert_eq!(
            said("I went to a support group yesterday.", "2023-05-08").as_deref(),
            Some("yesterday = Sun 7 May 2023")
        );
        assert_eq!(
            said("We moved last week", "2023-05-08").as_deref(),
            Some("last week = the week before 8 May 2023, Mon 1 May 2023 to Sun 7 May 2023")
        );
        assert_eq!(
            said("Last Fri I took my kids to a pottery workshop.", "2023-07-15").as_deref(),
            Some("Last Fri = the Friday before 15 July 2023, Fri 14 July 2023")
        );
        assert_eq!(
            said("I joined a new group last Tues.", "2023-07-20").as_deref(),
            Some("last Tues = the Tuesday before 20 July 2023, Tue 18 July 2023")
        );
        assert_eq!(
            said("We went camping with my fam two weekends ago.", "2023-07-17").as_deref(),
            Some("two weekends ago = two weekends before 17 July 2023, Sat 8 July 2023 and Sun 9 July 2023")
        );
        assert_eq!(
            said("that roadtrip this past weekend was insane!", "2023-10-20").as_deref(),
            Some("this past weekend = the weekend before 20 October 2023, Sat 14 October 2023 and Sun 15 October 2023")
        );
        assert_eq!(said("我们上个月搬家了", "2023-05-08").as_deref(), Some("上个月 = April 2023"));
        assert_eq!(
            said("Max and I had a blast on our camping trip last summer.", "2023-06-10").as_deref(),
            Some("last summer = the summer of 2022")
        );
        assert_eq!(
            said("Last winter we went skiing", "2023-06-10").as_deref(),
            Some("Last winter = the winter of 2022–2023")
        );
        assert_eq!(
            said("I went to a concert last night", "2023-06-10").as_deref(),
            Some("last night = Fri 9 June 2023")
        );
    }

    #[test]
    fn a_phrase_looking_ahead_is_counted_from_the_day_it_was_said() {
        assert_eq!(said("The studio opens tomorrow!", "2023-06-19").as_deref(), Some("tomorrow = Tue 20 June 2023"));
        assert_eq!(
            said("I'm hosting a gaming party next weekend.", "2022-06-03").as_deref(),
            Some("next weekend = the weekend after 3 June 2022, Sat 11 June 2022 and Sun 12 June 2022")
        );
        assert_eq!(
            said("Let's meet next Friday", "2023-07-15").as_deref(),
            Some("next Friday = the Friday after 15 July 2023, Fri 21 July 2023")
        );
        assert_eq!(said("明天见", "2023-05-08").as_deref(), Some("明天 = Tue 9 May 2023"));
        assert_eq!(
            said("I fly out in two weeks", "2023-07-15").as_deref(),
            Some("in two weeks = two weeks after 15 July 2023, Mon 24 July 2023 to Sun 30 July 2023")
        );
        assert_eq!(
            said("Because on Sunday I am going on a picnic date.", "2023-07-26").as_deref(),
            Some("on Sunday = the Sunday after 26 July 2023, Sun 30 July 2023")
        );
        assert_eq!(
            said("We volunteered at a pet shelter on Friday! We'll go back soon.", "2023-07-26").as_deref(),
            Some("on Friday = the Friday before 26 July 2023, Fri 21 July 2023")
        );
        assert_eq!(
            said("I won my fourth tournament on Friday!", "2023-07-26").as_deref(),
            Some("on Friday = the Friday before 26 July 2023, Fri 21 July 2023")
        );
    }

    #[test]
    fn each_sentence_says_what_its_phrase_meant() {
        assert_eq!(
            said("We got back yesterday. Tomorrow we unpack! And yesterday was long.", "2023-05-08").as_deref(),
            Some("yesterday = Sun 7 May 2023; Tomorrow = Tue 9 May 2023")
        );
        assert_eq!(
            said("I've kept bees for 3 years now, and the hives swarmed on the 9th.", "2025-07-12").as_deref(),
            Some("on the 9th = Wed 9 July 2025"),
            "the first phrase of a sentence"
        );
    }

    #[test]
    fn a_day_of_the_month_is_the_latest_such_day_or_the_coming_one() {
        assert_eq!(
            said("I met back up with my teammates on the 15th after my trip.", "2023-08-17").as_deref(),
            Some("on the 15th = Tue 15 August 2023")
        );
        assert_eq!(
            said("We moved in on the 28th, it was chaos", "2023-08-17").as_deref(),
            Some("on the 28th = Fri 28 July 2023")
        );
        assert_eq!(
            said("The concert is on the 2nd, I'm going to wear my new boots!", "2023-08-17").as_deref(),
            Some("on the 2nd = Sat 2 September 2023")
        );
        assert_eq!(said("My office is on the 15th floor", "2023-08-17"), None);
        assert_eq!(said("It was on the 31st", "2023-03-02").as_deref(), Some("on the 31st = Tue 31 January 2023"));
    }

    #[test]
    fn a_span_up_to_when_it_was_said_says_when_it_began() {
        assert_eq!(
            said("I've had them for 3 years! Their names are Pepper, Precious and Panda.", "2023-03-27").as_deref(),
            Some("for 3 years = since 2020")
        );
        assert_eq!(
            said("I've been playing for a month now, it's been tough but fun.", "2022-03-27").as_deref(),
            Some("for a month = since February 2022")
        );
        assert_eq!(
            said("Seven years now, and I've finally found my real muses.", "2023-09-13").as_deref(),
            Some("Seven years now = since 2016")
        );
        assert_eq!(
            said("She has been volunteering for two weeks", "2023-09-13").as_deref(),
            Some("for two weeks = since the week of Mon 28 August 2023")
        );
        assert_eq!(said("He was part of our family for 10 years.", "2023-06-03"), None, "a span that ended");
        assert_eq!(said("I'm going to Spain for two weeks.", "2023-06-03"), None, "a span to come");
    }

    #[test]
    fn dates_and_words_that_only_look_like_phrases_are_left_alone() {
        assert_eq!(said("We met on 8 May 2023.", "2023-06-01"), None);
        assert_eq!(said("I sat on the porch all afternoon", "2023-06-01"), None);
        assert_eq!(said("The sun was out all day", "2023-06-01"), None);
        assert_eq!(said("This is my last monthly report", "2023-06-01"), None);
        assert_eq!(said("I walk ten miles in a day", "2023-06-01"), None);
        // Up to when it was said: no day to name.
        assert_eq!(said("I've been painting a lot lately", "2023-06-01"), None);
        assert_eq!(said("I've been busy in the past two weeks", "2023-06-01"), None);
    }
}

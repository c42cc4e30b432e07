//! Timestamps: `parse_iso_ms`, JavaScript's `Date.parse` on the ISO-8601 forms Pi
//! writes (the same function as Python's `_time.parse_iso_ms`). The index keeps each
//! entry's result to order `getTree` siblings; nothing else reads timestamps.

/// Epoch milliseconds of an ISO-8601 timestamp as JavaScript `Date.parse` reads it
/// (`_time.parse_iso_ms`): `YYYY[-MM[-DD]]` or `±YYYYYY…`, optional
/// `THH:mm[:ss[.f+]]` (fraction truncated to ms) and `Z`/`±HH:mm`; no offset = UTC;
/// any day 1..=31 rolls over; `24:00` is the next midnight. `None` where JS gives NaN.
pub fn parse_iso_ms(s: &[u8]) -> Option<i64> {
    let mut i = 0;
    let num = |i: &mut usize, n: usize| -> Option<i64> {
        let d = s.get(*i..*i + n)?;
        let mut v = 0i64;
        for &c in d {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + (c - b'0') as i64;
        }
        *i += n;
        Some(v)
    };
    let year = match s.first()? {
        b'+' | b'-' => {
            let neg = s[0] == b'-';
            i = 1;
            let y = num(&mut i, 6)?;
            if neg && y == 0 {
                return None;
            }
            if neg {
                -y
            } else {
                y
            }
        }
        _ => num(&mut i, 4)?,
    };
    let (mut month, mut day) = (1, 1);
    if s.get(i) == Some(&b'-') {
        i += 1;
        month = num(&mut i, 2)?;
        if s.get(i) == Some(&b'-') {
            i += 1;
            day = num(&mut i, 2)?;
        }
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let (mut hour, mut minute, mut sec, mut ms) = (0, 0, 0, 0);
    let mut offset_ms = 0i64;
    if s.get(i) == Some(&b'T') {
        i += 1;
        hour = num(&mut i, 2)?;
        if s.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        minute = num(&mut i, 2)?;
        if s.get(i) == Some(&b':') {
            i += 1;
            sec = num(&mut i, 2)?;
            if s.get(i) == Some(&b'.') {
                i += 1;
                let d = i;
                let mut scale = 100;
                while let Some(c) = s.get(i).filter(|c| c.is_ascii_digit()) {
                    ms += (c - b'0') as i64 * scale;
                    scale /= 10;
                    i += 1;
                }
                if i == d {
                    return None;
                }
            }
        }
        match s.get(i) {
            Some(b'Z') => i += 1,
            Some(&c @ (b'+' | b'-')) => {
                i += 1;
                let oh = num(&mut i, 2)?;
                if s.get(i) != Some(&b':') {
                    return None;
                }
                i += 1;
                let om = num(&mut i, 2)?;
                if oh > 23 || om > 59 {
                    return None;
                }
                let d = (oh * 60 + om) * 60_000;
                offset_ms = if c == b'+' { -d } else { d };
            }
            _ => {}
        }
        if minute > 59 || sec > 59 || hour > 24 || (hour == 24 && (minute | sec | ms) != 0) {
            return None;
        }
    }
    if i != s.len() {
        return None;
    }
    let total = (days_from_civil(year, month, 1) + day - 1) * 86_400_000
        + hour * 3_600_000
        + minute * 60_000
        + sec * 1000
        + ms
        + offset_ms;
    (total.abs() <= 8_640_000_000_000_000).then_some(total)
}

pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The proleptic Gregorian date `(year, month, day)` `days` days after 1970-01-01
/// (H. Hinnant's `civil_from_days`, the inverse of [`days_from_civil`]).
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_from_days_inverts_days_from_civil() {
        for days in [-719_468, -1, 0, 11_016, 19_723, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
    }

    #[test]
    fn iso_timestamps_like_date_parse() {
        let p = |s: &str| parse_iso_ms(s.as_bytes());
        assert_eq!(p("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(p("2025-12-01T10:00:05.000Z"), Some(1_764_583_205_000));
        assert_eq!(p("2025-12-01T10:00:05Z"), p("2025-12-01T10:00:05.000Z"));
        assert_eq!(
            p("2025-12-01T11:00:04.000+02:00"),
            p("2025-12-01T09:00:04Z")
        );
        assert_eq!(
            p("2025-12-01T05:00:05.000-05:00"),
            p("2025-12-01T10:00:05Z")
        );
        assert_eq!(p("2025-12-01T10:00:04.9999Z"), Some(1_764_583_204_999));
        assert_eq!(p("2025-12-01"), p("2025-12-01T00:00Z"));
        assert_eq!(p("2025"), p("2025-01-01T00:00:00Z"));
        assert_eq!(p("2025-02-30"), p("2025-03-02"));
        assert_eq!(p("2025-12-01T24:00"), p("2025-12-02"));
        assert_eq!(p("+002025-12-01"), p("2025-12-01"));
        assert_eq!(p("-000001-01-01"), Some(-62_198_755_200_000));
        for bad in [
            "",
            "2025-13-01",
            "2025-00-01",
            "2025-12-32",
            "2025-12-01T24:00:01",
            "2025-12-01T10:60",
            "2025-12-01T10:00:61Z",
            "2025-12-01 10:00",
            "Dec 1 2025",
            "-000000-01-01",
            "2025-12-01T10:00+24:00",
            "2025-12-01T10:00:00.Z",
            "2025-1-01",
            "+275760-09-13T00:00:00.001Z",
        ] {
            assert_eq!(p(bad), None, "{bad}");
        }
        assert_eq!(
            p("+275760-09-13T00:00:00.000Z"),
            Some(8_640_000_000_000_000)
        );
    }
}

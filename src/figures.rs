//! A usage report's numbers as its table shows them: `view/_figures.py` states the rules
//! (`short_number` and the styles of `number_column`); this writes a whole column of
//! them in one call, where Python's formatting took ~0.7 µs a number (a report by
//! session of 20,000 files has 140,000). Held equal to the Python statement by
//! `tests/test_view_figures.py` (Rust's `{:.N}` and `{:.1e}` round the exact binary
//! value half to even, as Python's `format` does).

use std::fmt::Write;

/// A number of a report: a Python `int` within 64 bits or a `float`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    Int(i64),
    Float(f64),
}

/// How a column is written (the names `number_column` takes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `f"{x:,}"` for an int, `f"{x:,.1f}"` for a float.
    Full,
    /// `short_number`: at most 7 characters (`61.5M`, `4.6k`, `802`).
    Short,
    /// A cost in full: `f"{x:,.4f}"`.
    Cost,
    /// A cost, short: `f"{x:.2f}"` below 10,000 in size, else `short_number`.
    CostShort,
}

impl Style {
    pub fn named(name: &str) -> Option<Style> {
        Some(match name {
            "full" => Style::Full,
            "short" => Style::Short,
            "cost" => Style::Cost,
            "cost_short" => Style::CostShort,
            _ => return None,
        })
    }
}

/// `x` written in `style` to the end of `out`.
pub fn write(out: &mut String, x: Figure, style: Style) {
    match (style, x) {
        (Style::Full, Figure::Int(n)) => grouped(out, &n.to_string()),
        (Style::Full, Figure::Float(f)) => fixed_grouped(out, f, 1),
        (Style::Cost, x) => fixed_grouped(out, as_float(x), 4),
        (Style::Short, x) => short(out, x),
        (Style::CostShort, x) => {
            let f = as_float(x);
            if f.abs() < 1e4 {
                fixed(out, f, 2);
            } else {
                short(out, x);
            }
        }
    }
}

fn as_float(x: Figure) -> f64 {
    match x {
        // Python's int-to-float conversion rounds half to even, as `as` does.
        Figure::Int(n) => n as f64,
        Figure::Float(f) => f,
    }
}

/// `f"{f:.{digits}f}"`: `inf`, `-inf` and `nan` as Python spells them.
fn fixed(out: &mut String, f: f64, digits: usize) {
    if f.is_nan() {
        out.push_str("nan");
    } else if f.is_infinite() {
        out.push_str(if f > 0.0 { "inf" } else { "-inf" });
    } else {
        let _ = write!(out, "{f:.digits$}");
    }
}

/// `f"{f:,.{digits}f}"`.
fn fixed_grouped(out: &mut String, f: f64, digits: usize) {
    if !f.is_finite() {
        return fixed(out, f, digits);
    }
    grouped(out, &format!("{f:.digits$}"));
}

/// `digits` (an optional `-`, ASCII digits, then an optional fraction) with a comma
/// between each three digits of its whole part, as Python's `,` option writes it.
fn grouped(out: &mut String, digits: &str) {
    let (sign, rest) = match digits.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", digits),
    };
    let whole = rest.find('.').unwrap_or(rest.len());
    out.push_str(sign);
    for (i, c) in rest[..whole].chars().enumerate() {
        if i > 0 && (whole - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out.push_str(&rest[whole..]);
}

/// `short_number(x)`.
fn short(out: &mut String, x: Figure) {
    let f = as_float(x);
    let a = f.abs();
    if a >= 1e3 {
        if a >= 1e15 {
            if a.is_infinite() {
                return fixed(out, f, 0);
            }
            // Python's "2.5e+19" without its "+": Rust writes "2.5e19"; a negative
            // exponent cannot occur past 1e15.
            let _ = write!(out, "{f:.1e}");
            return;
        }
        let (unit, scale) = if a >= 1e12 {
            ('T', 1e12)
        } else if a >= 1e9 {
            ('G', 1e9)
        } else if a >= 1e6 {
            ('M', 1e6)
        } else {
            ('k', 1e3)
        };
        let _ = write!(out, "{:.1}{unit}", f / scale);
        return;
    }
    match x {
        _ if f.is_nan() => out.push_str("nan"),
        Figure::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Figure::Float(_) => fixed(out, f, if a >= 100.0 { 0 } else { 2 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(x: Figure, style: Style) -> String {
        let mut s = String::new();
        write(&mut s, x, style);
        s
    }

    #[test]
    fn styles_as_python_writes_them() {
        use Figure::{Float, Int};
        use Style::{Cost, CostShort, Full, Short};
        let cases = [
            (Int(1234567), Full, "1,234,567"),
            (Int(-1234), Full, "-1,234"),
            (Int(123), Full, "123"),
            (Float(1234.25), Full, "1,234.2"),
            (Float(-0.0), Full, "-0.0"),
            (Float(f64::NAN), Full, "nan"),
            (Float(f64::NEG_INFINITY), Cost, "-inf"),
            (Float(12345.678901), Cost, "12,345.6789"),
            (Int(61_500_000), Short, "61.5M"),
            (Int(4567), Short, "4.6k"),
            (Int(802), Short, "802"),
            (Int(-802), Short, "-802"),
            (Float(2.5e19), Short, "2.5e19"),
            (Float(f64::INFINITY), Short, "inf"),
            (Float(f64::NAN), Short, "nan"),
            (Float(99.994), Short, "99.99"),
            (Float(150.5), Short, "150"),
            (Float(0.125), CostShort, "0.12"),
            (Float(12345.0), CostShort, "12.3k"),
            (Float(f64::NAN), CostShort, "nan"),
        ];
        for (x, style, want) in cases {
            assert_eq!(w(x, style), want, "{x:?} {style:?}");
        }
    }
}

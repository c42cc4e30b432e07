//! A table's text, column by column: `view/_cells.py`'s `plain_columns` states the rule
//! (each column as wide as its widest cell in terminal cells, cells two spaces apart,
//! left- or right-justified, a line each ending in `\n`); this writes it in one pass,
//! where Python padded each of a report by session's 160,000 cells as a string of its
//! own and joined them again (~30 ms for 20,000 lines). Terminal widths are the
//! caller's: a column of ASCII cells is as wide as its bytes, any other comes with each
//! cell's width (`view.cells`). Held equal to the Python statement by
//! `tests/test_usage_text.py`.

/// One column of a table.
pub struct Column<'a> {
    /// The cells, one a line.
    pub cells: Vec<&'a str>,
    /// Each cell's width in terminal cells; `None`: each cell is ASCII, as wide as its bytes.
    pub sizes: Option<Vec<usize>>,
    /// Right-justified (else left).
    pub right: bool,
}

impl Column<'_> {
    fn size(&self, row: usize) -> usize {
        self.sizes
            .as_ref()
            .map_or_else(|| self.cells[row].len(), |s| s[row])
    }
}

/// The table's text, or `None` when the columns do not hold as many cells each (or a
/// column's sizes are not one a cell). No columns, or columns of no cells: `""`.
pub fn plain_columns(columns: &[Column<'_>]) -> Option<String> {
    let rows = columns.first().map_or(0, |c| c.cells.len());
    if columns
        .iter()
        .any(|c| c.cells.len() != rows || c.sizes.as_ref().is_some_and(|s| s.len() != rows))
    {
        return None;
    }
    let widths: Vec<usize> = columns
        .iter()
        .map(|c| (0..rows).map(|r| c.size(r)).max().unwrap_or(0))
        .collect();
    let bytes: usize = columns
        .iter()
        .zip(&widths)
        .map(|(c, w)| c.cells.iter().map(|x| x.len()).sum::<usize>() + rows * (w + 2))
        .sum();
    let mut out = String::with_capacity(bytes + rows);
    for r in 0..rows {
        for (k, (c, &width)) in columns.iter().zip(&widths).enumerate() {
            if k > 0 {
                out.push_str("  ");
            }
            let pad = width.saturating_sub(c.size(r));
            if c.right {
                out.extend(std::iter::repeat_n(' ', pad));
                out.push_str(c.cells[r]);
            } else {
                out.push_str(c.cells[r]);
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col<'a>(cells: &[&'a str], sizes: Option<Vec<usize>>, right: bool) -> Column<'a> {
        Column {
            cells: cells.to_vec(),
            sizes,
            right,
        }
    }

    #[test]
    fn pads_each_column_to_its_widest_cell() {
        let t = plain_columns(&[
            col(&["day", "2025-01-01", "total"], None, false),
            col(&["cost", "1.5", "12.25"], None, true),
        ]);
        assert_eq!(
            t.as_deref(),
            Some("day          cost\n2025-01-01    1.5\ntotal       12.25\n")
        );
    }

    #[test]
    fn wide_cells_pad_by_their_given_sizes() {
        // "日本" is four terminal cells in six bytes.
        let t = plain_columns(&[
            col(&["日本", "a"], Some(vec![4, 1]), false),
            col(&["1", "22"], None, true),
        ]);
        assert_eq!(t.as_deref(), Some("日本   1\na     22\n"));
    }

    #[test]
    fn a_cell_wider_than_its_size_says_is_not_cut() {
        let t = plain_columns(&[col(&["abc", "d"], Some(vec![1, 1]), true)]);
        assert_eq!(t.as_deref(), Some("abc\nd\n"));
    }

    #[test]
    fn uneven_columns_are_refused_and_nothing_is_empty() {
        assert_eq!(
            plain_columns(&[col(&["a"], None, false), col(&[], None, false)]),
            None
        );
        assert_eq!(plain_columns(&[col(&["a"], Some(vec![]), false)]), None);
        assert_eq!(plain_columns(&[]).as_deref(), Some(""));
        assert_eq!(
            plain_columns(&[col(&[], None, false), col(&[], None, true)]).as_deref(),
            Some("")
        );
    }
}

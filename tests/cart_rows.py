"""Rows of a CART release after the replicated uniques are removed: which records they are, how many."""


def kept_positions(frame, data, columns):
    """The positions in ``data`` of ``frame``'s rows when, on ``columns``, they are rows of ``data`` in data order
    (rows removed, none changed or moved), else ``None``: a greedy walk, exact for that question (where equal rows
    follow each other, the earliest is taken)."""
    mine = [tuple(r) for r in frame[columns].astype(object).to_numpy()]
    theirs = [tuple(r) for r in data[columns].astype(object).to_numpy()]
    positions, j = [], 0
    for row in mine:
        while j < len(theirs) and theirs[j] != row:
            j += 1
        if j == len(theirs):
            return None
        positions.append(j)
        j += 1
    return positions


def kept_rows_in_order(frame, data, columns):
    """Whether ``frame``'s rows, on ``columns``, are rows of ``data`` in data order (:func:`kept_positions`)."""
    return kept_positions(frame, data, columns) is not None


def rows_per_dataset(release):
    """Rows each dataset keeps: the records less the replicated uniques removed from it, by the removal table."""
    removed = release.measure_input.removed
    return dict(zip(removed["dataset"], removed["kept"], strict=True))

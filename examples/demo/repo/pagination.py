"""Split a list into pages for display."""


def page(items, number, size):
    """Return page `number` (counted from 1) of `items`, `size` items per page."""
    start = number * size
    return items[start:start + size]


def page_count(items, size):
    """How many pages `items` fill at `size` items per page."""
    return (len(items) + size - 1) // size

import unittest

from pagination import page, page_count


class PageTest(unittest.TestCase):
    def test_first_page_starts_at_the_first_item(self):
        self.assertEqual(page(list(range(1, 11)), 1, 3), [1, 2, 3])

    def test_last_page_holds_the_remainder(self):
        self.assertEqual(page(list(range(1, 11)), 4, 3), [10])

    def test_page_count_rounds_up(self):
        self.assertEqual(page_count(list(range(1, 11)), 3), 4)


if __name__ == "__main__":
    unittest.main()

"""The generation scores against values computed by hand."""

from __future__ import annotations

import pytest

from trainlab_plugins.textgen import metrics


def test_rouge_l_is_the_longest_common_subsequence_f_measure():
    # LCS("the cat sat", "the cat sat on the mat") = 3 words: P = 3/3, R = 3/6, F = 2PR/(P+R) = 2/3
    assert metrics.rouge_l("the cat sat", "the cat sat on the mat") == pytest.approx(2 / 3, abs=1e-4)
    # Chinese by characters: LCS 6 of 6 and 7 -> F = 2 * 1 * 6/7 / (1 + 6/7) = 12/13
    assert metrics.rouge_l("猫坐在垫子上", "猫坐在垫子上了") == pytest.approx(12 / 13, abs=1e-4)
    assert metrics.rouge_l("Apple", "an apple") == pytest.approx(2 * 1 * 0.5 / 1.5, abs=1e-4)  # lower-cased words
    assert metrics.rouge_l("", "") == 1.0 and metrics.rouge_l("x", "") == 0.0


def test_chrf_exact_match_and_the_share_that_stopped():
    assert metrics.chrf("abc def", "abc def") == pytest.approx(1.0)
    assert metrics.chrf("xyz", "abc") == pytest.approx(0.0)
    score, rows = metrics.score_rows(
        [
            {"prompt": "p1", "expected": "It is 5.", "generated": " It is 5. ", "stopped": True},
            {"prompt": "p2", "expected": "apple", "generated": "pear", "stopped": False},
        ]
    )
    assert score["exact_match"] == 0.5 and score["stopped"] == 0.5
    assert rows[0]["exact_match"] and rows[0]["rouge_l"] == pytest.approx(1.0) and rows[0]["chrf"] == pytest.approx(1.0)
    assert score["rouge_l"] == pytest.approx(0.5)
    assert score["chrf"] == pytest.approx((1.0 + rows[1]["chrf"]) / 2)
    assert 0.0 <= rows[1]["chrf"] < 0.5

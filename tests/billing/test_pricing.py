"""Each billing rule of the contract's Limits section and DESIGN.md section 3."""

import pytest

from billing import pricing


def test_a_transcript_costs_one_video_length():
    assert pricing.job_cost("transcript", 600) == 600


def test_subtitles_cost_one_length_plus_one_per_translated_language():
    assert pricing.job_cost("subtitles", 600) == 600
    assert pricing.job_cost("subtitles", 600, translations=3) == 600 * 4


@pytest.mark.parametrize("quality,multiplier", [("default", 3), ("hd", 4), ("uhd", 5)])
def test_a_burned_video_costs_3_4_or_5_lengths_by_quality(quality, multiplier):
    assert pricing.job_cost("burned", 100, quality) == 100 * multiplier


@pytest.mark.parametrize("quality,multiplier", [("default", 3), ("hd", 4), ("uhd", 5)])
def test_each_translated_burned_video_adds_a_translation_and_another_burn(quality, multiplier):
    assert pricing.job_cost("burned", 100, quality, translations=2) == 100 * multiplier + 2 * 100 * (1 + multiplier)
    assert pricing.translation_cost("burned", 100, quality) == 100 * (1 + multiplier)


def test_a_playlist_costs_the_sum_of_its_videos():
    assert (
        pricing.playlist_cost([60, 120, 30], "burned", "hd", translations=1)
        == sum(pricing.job_cost("burned", s, "hd", 1) for s in (60, 120, 30))
        == 210 * 9
    )


def test_a_preview_covers_the_whole_minutes_the_balance_pays_for():
    assert pricing.affordable_minutes(10 * 60, "transcript") == 10
    assert pricing.affordable_minutes(10 * 60 - 1, "transcript") == 9
    assert pricing.affordable_minutes(10 * 60, "burned", "uhd") == 2
    assert pricing.affordable_minutes(-5, "transcript") == 0


def test_minutes_read_naturally():
    assert pricing.format_minutes(60) == "1 minute"
    assert pricing.format_minutes(150) == "2.5 minutes"
    assert pricing.format_minutes(600) == "10 minutes"

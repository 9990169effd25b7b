"""convert_time with a fixed clock: DST-correct offsets from zoneinfo on both sides of a change,
the date a bare time refers to (today in the source place), and clear errors."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from saber.testing.openmeteo import fake_open_meteo
from saber.tools import Tool, ToolArgumentError
from saber.tools.builtin import PlaceResolver, make_convert_time_tool
from saber.tools.builtin.places import UnknownPlaceError

WINTER = datetime(2026, 1, 15, 3, 0, tzinfo=UTC)  # London on GMT (UTC+0); New York still on the 14th
SUMMER = datetime(2026, 7, 15, 3, 0, tzinfo=UTC)  # London on BST (UTC+1)


def at(instant: datetime, resolver: PlaceResolver | None = None) -> Tool:
    return make_convert_time_tool(clock=lambda: instant, resolver=resolver)


@pytest.mark.parametrize(("now", "said"), [
    (WINTER, "15:00 on Thursday, 2026-01-15 in Beijing (北京), China (CST, Asia/Shanghai, UTC+08:00) is 07:00 on "
             "Thursday, 2026-01-15 in London (伦敦), United Kingdom (GMT, Europe/London, UTC+00:00); no date was "
             "given, so the date is today in Beijing: 2026-01-15."),
    (SUMMER, "15:00 on Wednesday, 2026-07-15 in Beijing (北京), China (CST, Asia/Shanghai, UTC+08:00) is 08:00 on "
             "Wednesday, 2026-07-15 in London (伦敦), United Kingdom (BST, Europe/London, UTC+01:00); no date was "
             "given, so the date is today in Beijing: 2026-07-15."),
])
async def test_beijing_3_pm_in_london_follows_british_summer_time(now: datetime, said: str) -> None:
    text = await at(now).run({"time": "下午3点", "from_timezone": "北京", "to_timezone": "伦敦"})
    assert text.startswith(said)


@pytest.mark.parametrize(("date", "london"), [
    ("2026-03-28", "06:00 on Saturday, 2026-03-28"),  # the day before the clocks go forward
    ("2026-03-30", "07:00 on Monday, 2026-03-30"),
    ("2026-10-24", "07:00 on Saturday, 2026-10-24"),  # the day before they go back
    ("2026-10-26", "06:00 on Monday, 2026-10-26"),
])
async def test_a_given_date_takes_that_dates_offsets(date: str, london: str) -> None:
    text = await at(WINTER).run({"time": "3 pm", "from_timezone": "Asia/Tokyo", "to_timezone": "London", "date": date})
    assert f"is {london} in London" in text and f"the date {date} was given" in text


async def test_a_bare_time_is_today_in_the_source_place_not_in_utc() -> None:
    # at 03:00 UTC on the 15th it is still the 14th in New York: "tomorrow" there is the 15th
    text = await at(WINTER).run({"time": "上午9:30", "from_timezone": "纽约", "to_timezone": "东京", "date": "明天"})
    assert text.startswith("09:30 on Thursday, 2026-01-15 in New York (纽约), United States (EST, America/New_York, "
                           "UTC-05:00) is 23:30 on Thursday, 2026-01-15 in Tokyo (东京), Japan")
    assert "the date is 明天 in New York: 2026-01-15" in text
    text = await at(WINTER).run({"time": "9 pm", "from_timezone": "New York", "to_timezone": "Asia/Tokyo"})
    assert "21:00 on Wednesday, 2026-01-14 in New York" in text and "is 11:00 on Thursday, 2026-01-15 (the next day)" in text
    assert "today in New York: 2026-01-14" in text


@pytest.mark.parametrize(("time", "label"), [
    ("10:00", "10:00"), ("3 pm", "15:00"), ("3:30pm", "15:30"), ("12 am", "00:00"), ("noon", "12:00"),
    ("下午三点半", "15:30"), ("上午九点一刻", "09:15"), ("晚上8点45分", "20:45"), ("中午1点", "13:00"), ("凌晨12点", "00:00"),
])
async def test_times_as_people_write_them(time: str, label: str) -> None:
    text = await at(WINTER).run({"time": time, "from_timezone": "UTC", "to_timezone": "UTC"})
    assert text.startswith(f"{label} on Thursday, 2026-01-15 in UTC is {label} on Thursday")


async def test_utc_to_an_iana_zone_with_a_half_hour_offset() -> None:
    text = await at(WINTER).run({"time": "10:00", "from_timezone": "UTC", "to_timezone": "Asia/Kolkata"})
    assert text.startswith("10:00 on Thursday, 2026-01-15 in UTC is 15:30 on Thursday, 2026-01-15 in Asia/Kolkata "
                           "(IST, UTC+05:30)")


async def test_a_time_the_clocks_skip_is_an_error_and_a_repeated_one_says_which_is_used() -> None:
    with pytest.raises(ToolArgumentError, match=r"01:30 on 2026-03-29 does not exist in Europe/London: the clocks go "
                                                r"forward then \(from UTC\+00:00 to UTC\+01:00\)"):
        await at(WINTER).run({"time": "01:30", "from_timezone": "London", "to_timezone": "UTC", "date": "2026-03-29"})
    text = await at(WINTER).run({"time": "01:30", "from_timezone": "London", "to_timezone": "UTC", "date": "2026-10-25"})
    assert "is 00:30 on Sunday, 2026-10-25 in UTC" in text
    assert "01:30 occurs twice in Europe/London that day (the clocks go back): the first, at UTC+01:00, is used" in text


@pytest.mark.parametrize(("args", "message"), [
    ({"time": "soon"}, "convert_time: cannot read a time of day in 'soon'"),
    ({"time": "25:00"}, "convert_time: '25:00' is not a time of day"),
    ({"time": "13 pm"}, "convert_time: '13 pm' is not a time: with am/pm the hour is 1 to 12"),
    ({"time": "3 pm", "date": "2026-02-30"}, "convert_time: '2026-02-30' is not a date that exists"),
    ({"time": "3 pm", "date": "someday"}, "convert_time: cannot read a date in 'someday'"),
    ({"time": "3 pm", "to_timezone": "Mars/Olympus"}, "convert_time: unknown place 'Mars/Olympus'"),
])
async def test_bad_input_is_an_error_naming_it(args: dict[str, str], message: str) -> None:
    with pytest.raises(ToolArgumentError) as caught:
        await at(WINTER).run({"from_timezone": "UTC", "to_timezone": "UTC", **args})
    assert str(caught.value).startswith(message)


async def test_an_unknown_place_is_named_and_a_geocoded_one_is_converted() -> None:
    with fake_open_meteo() as geo:
        tool = at(WINTER, PlaceResolver(geocoding_url=geo.geocoding_url))
        with pytest.raises(UnknownPlaceError, match="convert_time: unknown place 'Gotham'"):
            await tool.run({"time": "3 pm", "from_timezone": "Gotham", "to_timezone": "London"})
        text = await tool.run({"time": "3 pm", "from_timezone": "Reykjavik", "to_timezone": "Tbilisi"})
    assert "15:00 on Thursday, 2026-01-15 in Reykjavik (雷克雅未克), Iceland (GMT, Atlantic/Reykjavik" in text
    assert "is 19:00 on Thursday, 2026-01-15 in Tbilisi (第比利斯), Georgia" in text  # both known offline (CLDR)

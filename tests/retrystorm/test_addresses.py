import pytest

from retrystorm.addresses import BadPortError, http_address


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" http://127.0.0.1:8071/ ", "http://127.0.0.1:8071"),
        ("https://chaos.example/api/", "https://chaos.example/api"),
        ("http://target:8070", "http://target:8070"),
    ],
)
def test_an_address_comes_back_without_blanks_or_a_trailing_slash(text, expected):
    assert http_address(text) == expected


@pytest.mark.parametrize("text", ["127.0.0.1:8071", "ftp://host", "http://", "http://host/?a=1", "http://host/#top"])
def test_anything_but_an_http_address_with_a_host_is_refused(text):
    with pytest.raises(ValueError, match="not an http:// or https:// address") as refused:
        http_address(text)
    assert not isinstance(refused.value, BadPortError)


@pytest.mark.parametrize("text", ["http://host:0", "http://host:99999", "http://host:http"])
def test_a_port_outside_1_to_65535_is_a_bad_port(text):
    with pytest.raises(BadPortError, match="not a number from 1 to 65535"):
        http_address(text)

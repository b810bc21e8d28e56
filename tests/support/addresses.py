"""Internal hosts in the spellings an attacker tries (48): each with the kind of refusal it gets.

Shared by the policy's unit tests (``tests/unit/outbound``) and the table of every HTTP surface that
takes a URL (``tests/api/test_urls.py``). An empty kind: refused as reserved or otherwise not public.
"""

from __future__ import annotations

from typing import Final

INTERNAL_HOSTS: Final = {
    # loopback, in the spellings a resolver accepts
    "127.0.0.1": "loopback", "127.1": "loopback", "127.0.1": "loopback", "2130706433": "loopback",
    "0177.0.0.1": "loopback", "0177.1": "loopback", "017700000001": "loopback", "0x7f.0.0.1": "loopback",
    "0x7f.1": "loopback", "0x7f000001": "loopback", "127.000.000.001": "loopback",
    "[::1]": "loopback", "[0:0:0:0:0:0:0:1]": "loopback", "[::ffff:127.0.0.1]": "loopback",
    "[::ffff:7f00:1]": "loopback", "[0:0:0:0:0:ffff:7f00:1]": "loopback", "[64:ff9b::7f00:1]": "loopback",
    "[2002:7f00:1::]": "loopback",
    "0": "unspecified", "0.0.0.0": "unspecified", "[::]": "unspecified",
    # metadata services and link-local
    "169.254.169.254": "link-local", "2852039166": "link-local", "0xa9fea9fe": "link-local",
    "[::ffff:169.254.169.254]": "link-local", "[fe80::1]": "link-local", "[fd00:ec2::254]": "unique-local",
    "100.100.100.200": "shared",
    "metadata.google.internal": "metadata", "METADATA.GOOGLE.INTERNAL.": "metadata", "metadata": "metadata",
    "instance-data": "metadata",
    # private, unique-local, multicast, reserved
    "10.0.0.1": "private", "0x0a000001": "private", "172.16.5.4": "private", "192.168.1.1": "private",
    "012.0.0.1": "private", "[::ffff:10.0.0.1]": "private",
    "[fc00::1]": "unique-local", "[fdff::1]": "unique-local", "224.0.0.1": "multicast", "[ff02::1]": "multicast",
    "240.0.0.1": "", "255.255.255.255": "", "192.0.2.1": "",
    "localhost": "loopback", "LocalHost.": "loopback", "db.localhost": "loopback",
}  # fmt: skip

INTERNAL_URLS: Final = {f"http://{host}/x": "" for host in INTERNAL_HOSTS}
"""Each internal host as a URL: refused by the policy, or unreadable (``0177.0.0.1`` is no address to httpx)."""

MALFORMED_URLS: Final = {
    # IDNA garbage
    "http://xn--/": "IDNA", "http://xn--localhost/": "IDNA", "http://XN--LOCALHOST/": "IDNA",
    "http://xn--abc.example/": "IDNA", "http://xn--ls8h.example/": "IDNA", "http://xn--a.xn--b/": "IDNA",
    "http://a..b.example/": "host name", "http://-bad.example/": "host name", "http://ex%41mple.com/": "host name",
    f"http://{'a' * 64}.example/": "host name", "http://①②⑦.0.0.1/": "cannot be read",
    "http://\uff10x7f.1/": "cannot be read",  # a fullwidth zero
    "http://[::1%25eth0]/": "host name", "http://256.1.1.1/": "cannot be read",
    # ports out of range
    "http://example.com:0/": "port 0", "http://example.com:65536/": "port 65536",
    "http://example.com:99999/": "port 99999", "http://example.com:abc/": "cannot be read",
    "http://example.com:-1/": "port -1", "http://example.com:8o/": "cannot be read",
    # userinfo and other tricks that read differently in different parsers
    "http://good.example@127.0.0.1/": "user name", "http://127.0.0.1#@good.example/": "#fragment",
    "http://127.0.0.1\\@good.example/": "backslashes", "http://good.example\\@127.0.0.1/": "backslashes",
    "http://user:pass@good.example/": "user name", "http://127.0.0.1%2f@good.example/": "user name",
    "http://good.example:80@127.0.0.1/": "user name", "https://good.example/#x": "#fragment",
    "http://exa mple.com/": "spaces", "http://example.com/a\nb": "control characters",
    # not http(s), or no host
    "ftp://example.com/": "http:// or https://", "file:///etc/passwd": "http:// or https://",
    "javascript:alert(1)": "http:// or https://", "http:///x": "must name a host", "http:example.com": "must name",
    "//example.com/x": "http:// or https://",
    f"https://example.com/{'x' * 2000}": "longer than 2000",
}  # fmt: skip
"""URLs that are no usable http(s) URL, with a word of the reason each gets."""

BAD_URLS: Final = {**INTERNAL_URLS, **MALFORMED_URLS}

PUBLIC_URLS: Final = (
    "https://example.com/hook", "http://93.184.216.34:8080/x?y=1", "https://münchen.de/", "http://xn--mnchen-3ya.de/",
    "https://[2606:2800:220:1::1]/in", "HTTPS://EXAMPLE.COM./a%20b", "http://134744072/", "https://a_b.example:443/",
)  # fmt: skip
"""Fine public URLs (in a few spellings): accepted everywhere."""

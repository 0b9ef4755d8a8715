"""An HTML page as the report tests read it: its tags, its nesting, what it would fetch."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """What a test needs of a page: its tags' attributes, and whether it is well nested."""

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "source", "wbr"}

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> does not close {self.stack[-1:]}")
            return
        self.stack.pop()

    def all(self, tag: str, **attrs: str) -> list[dict[str, str | None]]:
        return [
            a for t, a in self.tags if t == tag and all(a.get(k) == v for k, v in attrs.items())
        ]

    def loads(self) -> list[str]:
        """Every URL the page would fetch when opened: src anywhere, href on <link>, url()."""
        found = [a["src"] or "" for _, a in self.tags if "src" in a]
        found += [a["href"] or "" for t, a in self.tags if t == "link" and "href" in a]
        return found

    def links_out(self) -> list[str]:
        return [a.get("href") or "" for a in self.all("a")]

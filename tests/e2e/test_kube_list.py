"""The control plane client lists in pages, as kubectl does, and joins them."""

from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from plane.kube import LIST_PAGE, Kube


class Paged(Kube):
    """An API server holding ``count`` ConfigMaps, answering lists a page at a time."""

    def __init__(self, count: int) -> None:
        super().__init__(server="https://fake.invalid", ca_file=Path("/nonexistent"))
        self.count = count
        self.asked: list[dict[str, list[str]]] = []

    def request(self, method: str, path: str, *args: Any, **kwargs: Any) -> Any:
        query = parse_qs(urlsplit(path).query)
        self.asked.append(query)
        start = int(query.get("continue", ["0"])[0])
        end = min(start + int(query["limit"][0]), self.count)
        items = [{"metadata": {"name": f"cm-{i}"}} for i in range(start, end)]
        return {"items": items, "metadata": {"continue": str(end) if end < self.count else ""}}

    def path(self, api_version: str, kind: str, namespace: str = "", name: str = "") -> str:
        return "/api/v1/configmaps"


def test_a_list_longer_than_a_page_is_read_whole_in_pages() -> None:
    kube = Paged(2 * LIST_PAGE + 1)
    found = kube.list("v1", "ConfigMap", selector="a=b")
    assert [o["metadata"]["name"] for o in found] == [f"cm-{i}" for i in range(2 * LIST_PAGE + 1)]
    assert all(o["kind"] == "ConfigMap" for o in found)
    assert len(kube.asked) == 3
    assert all(q["labelSelector"] == ["a=b"] for q in kube.asked)

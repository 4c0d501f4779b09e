"""RocketMQ's ``FAQUrl``: the pointer to its FAQ that ends many of the broker's and the name
server's remarks. Clients print those remarks, so they are kept byte for byte."""

from __future__ import annotations

from typing import Final

#: Every ``FAQUrl`` constant of RocketMQ 4.9.8 is this page.
FAQ_URL: Final = "http://rocketmq.apache.org/docs/faq/"
#: ``FAQUrl.suggestTodo(url)``: appended to a remark.
FAQ_SUGGESTION: Final = f"\nSee {FAQ_URL} for further details."

"""The tool-selection benchmark's data: tools beyond the built-ins, and labelled queries.

The labels were written before the index was tuned. Each query lists its needs; a need is a
list of interchangeable tools (the built-in get_time and the time server's get_current_time
both tell the time), covered when any of them is chosen.
"""

from __future__ import annotations

MCP_TOOLS: list[tuple[str, str, dict[str, str], list[str]]] = [
    # mcp-server-time 2026.10.19 (tools/list, recorded)
    ("get_current_time", "Get current time in a specific timezone", {"timezone": "IANA timezone name (e.g., 'America/New_York', 'Europe/London')."}, ["timezone"]),
    ("convert_time", "Convert time between timezones", {"source_timezone": "Source IANA timezone name", "time": "Time to convert in 24-hour format (HH:MM)", "target_timezone": "Target IANA timezone name"}, ["source_timezone", "time", "target_timezone"]),
    # @modelcontextprotocol/server-everything 2026.8.31 (tools/list, recorded)
    ("echo", "Echoes back the input string", {"message": "Message to echo"}, ["message"]),
    ("get-annotated-message", "Demonstrates how annotations can be used to provide metadata about content.", {"messageType": "Type of message to demonstrate different annotation patterns", "includeImage": "Whether to include an example image"}, ["messageType"]),
    ("get-env", "Returns all environment variables, helpful for debugging MCP server configuration", {}, []),
    ("get-resource-links", "Returns up to ten resource links that reference different types of resources", {"count": "Number of resource links to return (1-10)"}, []),
    ("get-resource-reference", "Returns a resource reference that can be used by MCP clients", {"resourceType": "Text or Blob", "resourceId": "ID of the text resource to fetch"}, []),
    ("get-structured-content", "Returns structured content along with an output schema for client data validation", {"location": "Choose city"}, ["location"]),
    ("get-sum", "Returns the sum of two numbers", {"a": "First number", "b": "Second number"}, ["a", "b"]),
    ("get-tiny-image", "Returns a tiny MCP logo image.", {}, []),
    ("gzip-file-as-resource", "Compresses a single file using gzip compression. Depending upon the selected output type, returns either the compressed data as a gzipped resource or a resource link", {"name": "Name of the output file", "data": "URL or data URI of the file content to compress", "outputType": "How the resulting gzipped file should be returned"}, []),
    ("toggle-simulated-logging", "Toggles simulated, random-leveled logging on or off.", {}, []),
    ("toggle-subscriber-updates", "Toggles simulated resource subscription updates on or off.", {}, []),
    ("trigger-long-running-operation", "Demonstrates a long running operation with progress updates.", {"duration": "Duration of the operation in seconds", "steps": "Number of steps in the operation"}, []),
    ("simulate-research-query", "Simulates a deep research operation that gathers, analyzes, and synthesizes information.", {"topic": "The research topic to investigate", "ambiguous": "Simulate an ambiguous query"}, ["topic"]),
]

# Generated distractors: realistic operations across many systems (verb × object), 96 tools.
_OBJECTS: list[tuple[str, str, dict[str, str]]] = [
    ("calendar_event", "an event in the user's calendar", {"title": "Event title", "start": "Start date and time", "end": "End date and time"}),
    ("github_issue", "an issue in a GitHub repository", {"owner": "Repository owner", "repo": "Repository name", "title": "Issue title"}),
    ("pull_request", "a pull request on GitHub", {"owner": "Repository owner", "repo": "Repository name", "number": "Pull request number"}),
    ("slack_message", "a message in a Slack channel", {"channel": "Channel name", "text": "Message text"}),
    ("email_draft", "an email draft in the mailbox", {"to": "Recipients", "subject": "Subject line", "body": "Body text"}),
    ("jira_ticket", "a ticket in a Jira project", {"project": "Project key", "summary": "Ticket summary"}),
    ("database_row", "a row in a SQL database table", {"table": "Table name", "where": "Filter condition"}),
    ("s3_object", "an object in an Amazon S3 bucket", {"bucket": "Bucket name", "key": "Object key"}),
    ("docker_container", "a Docker container on the host", {"container": "Container name or id"}),
    ("kubernetes_pod", "a pod in a Kubernetes cluster", {"namespace": "Namespace", "pod": "Pod name"}),
    ("spreadsheet_row", "a row in a Google Sheets spreadsheet", {"spreadsheet_id": "Spreadsheet id", "range": "A1 range"}),
    ("notion_page", "a page in a Notion workspace", {"page_id": "Page id", "title": "Page title"}),
    ("todo_item", "an item on the user's to-do list", {"text": "What to do", "due": "Due date"}),
    ("contact", "a person in the address book", {"name": "Full name", "phone": "Phone number"}),
    ("file", "a file on the local file system", {"path": "File path"}),
    ("directory", "a directory on the local file system", {"path": "Directory path"}),
    ("git_branch", "a branch in a local git repository", {"repo_path": "Repository path", "branch": "Branch name"}),
    ("stripe_invoice", "an invoice in Stripe billing", {"customer": "Customer id", "amount": "Amount in cents"}),
    ("shopify_order", "an order in a Shopify store", {"order_id": "Order id"}),
    ("translation_memory", "an entry in the translation memory", {"source_text": "Source text", "target_language": "Target language code"}),
    ("image_asset", "an image in the media library", {"image_id": "Image id", "alt_text": "Alternative text"}),
    ("playlist", "a music playlist on Spotify", {"playlist_id": "Playlist id", "track": "Track name"}),
    ("bookmark", "a saved browser bookmark", {"url": "Page URL", "folder": "Bookmark folder"}),
    ("reminder", "a reminder on the phone", {"text": "Reminder text", "when": "When to remind"}),
]
_VERBS = [("create", "Create"), ("get", "Get"), ("update", "Update"), ("delete", "Delete")]

DISTRACTORS: list[tuple[str, str, dict[str, str], list[str]]] = [
    (f"{verb}_{obj}", f"{Verb} {what}.", params, list(params)[:1])
    for obj, what, params in _OBJECTS for verb, Verb in _VERBS
]

TIME = ["get_time", "get_current_time"]

QUERIES: list[tuple[str, list[list[str]]]] = [
    ("现在东京几点", [TIME]),
    ("what time is it in New York right now", [TIME]),
    ("纽约上午 9 点是北京时间几点", [["convert_time"]]),
    ("convert 14:30 from London time to Tokyo time", [["convert_time"]]),
    ("北京明天天气怎么样", [["get_weather"]]),
    ("will it rain in Paris today", [["get_weather"]]),
    ("搜索一下最新的 Python 3.13 新特性", [["search_web"]]),
    ("look up the latest news about the Mars mission", [["search_web"]]),
    ("在我的知识库里找一下报销流程", [["rag_search"]]),
    ("what does our internal handbook say about vacation days", [["rag_search"]]),
    ("把这段报告保存到文档库", [["write_document"]]),
    ("echo back the words hello world", [["echo"]]),
    ("计算 19 加 23 的和", [["get-sum"]]),
    ("what is the sum of 1234 and 4321", [["get-sum"]]),
    ("show me the environment variables of the MCP server", [["get-env"]]),
    ("send me a tiny test image", [["get-tiny-image"]]),
    ("gzip this README file and give me a link to the compressed resource", [["gzip-file-as-resource"]]),
    ("run a long operation for 10 seconds with progress updates", [["trigger-long-running-operation"]]),
    ("turn on simulated logging", [["toggle-simulated-logging"]]),
    ("give me structured weather content for Chicago with an output schema", [["get-structured-content"]]),
    ("do a deep research on quantum error correction", [["simulate-research-query"]]),
    ("明天下午三点在日历上建一个组会", [["create_calendar_event"]]),
    ("delete my dentist appointment from the calendar", [["delete_calendar_event"]]),
    ("open an issue in octocat/hello-world titled 'crash on start'", [["create_github_issue"]]),
    ("close the GitHub issue about the login bug", [["update_github_issue"]]),
    ("show me pull request 42 in the saber repo", [["get_pull_request"]]),
    ("post 'deploy done' to the #ops Slack channel", [["create_slack_message"]]),
    ("给老板写一封邮件草稿，主题是周报", [["create_email_draft"]]),
    ("file a Jira ticket in project OPS for the broken backup", [["create_jira_ticket"]]),
    ("从 users 表里删除 id 为 7 的那一行", [["delete_database_row"]]),
    ("fetch the row for order 1001 from the orders table", [["get_database_row"]]),
    ("upload report.pdf to the S3 bucket reports", [["create_s3_object"]]),
    ("remove the old backup object from the S3 bucket", [["delete_s3_object"]]),
    ("restart... no, stop and delete the nginx docker container", [["delete_docker_container"]]),
    ("查看 kube-system 命名空间里 coredns 这个 pod", [["get_kubernetes_pod"]]),
    ("add a row with this month's sales to the Google Sheets spreadsheet", [["create_spreadsheet_row"]]),
    ("rename the Notion page 'Roadmap' to 'Roadmap 2027'", [["update_notion_page"]]),
    ("把买牛奶加到待办事项里", [["create_todo_item"]]),
    ("update Alice's phone number in my contacts", [["update_contact"]]),
    ("read the file /etc/hosts", [["get_file"]]),
    ("create a new directory called build", [["create_directory"]]),
    ("新建一个 git 分支叫 feature/mcp", [["create_git_branch"]]),
    ("send customer cus_123 an invoice for 50 dollars", [["create_stripe_invoice"]]),
    ("what is the status of Shopify order 5512", [["get_shopify_order"]]),
    ("add this sentence and its French translation to the translation memory", [["create_translation_memory"]]),
    ("change the alt text of image 77 in the media library", [["update_image_asset"]]),
    ("add 'Bohemian Rhapsody' to my road trip playlist", [["update_playlist"]]),
    ("bookmark https://modelcontextprotocol.io in my reading folder", [["create_bookmark"]]),
    ("提醒我晚上八点给妈妈打电话", [["create_reminder"]]),
    ("东京现在几点，天气怎么样", [TIME, ["get_weather"]]),
    ("what's the weather in Berlin and search for events there this weekend", [["get_weather"], ["search_web"]]),
    ("read notes.txt and email it to Bob as a draft", [["get_file"], ["create_email_draft"]]),
    ("check pull request 7 and post a summary to Slack", [["get_pull_request"], ["create_slack_message"]]),
    ("add 3 and 4 then echo the result", [["get-sum"], ["echo"]]),
    ("create a calendar event for the release and a reminder the day before", [["create_calendar_event"], ["create_reminder"]]),
]

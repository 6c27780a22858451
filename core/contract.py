"""The contract's names, each defined once: the conversation workflow's type, signals, updates and
queries, and every error type the workflows, activities, doors, CLI and UI raise or read.

A name here is what people, scripts and other programs rely on (README.md and docs/): the
ApplicationError type of a refused update, the `error.type` of an HTTP answer, the code of
an AG-UI run error. Code names them from here, never by a string literal of its own.
"""

from __future__ import annotations

WORKFLOW_TYPE = "ConversationWorkflow"

# Signals of ConversationWorkflow.
SIGNAL_SUBMIT_MESSAGE = "submit_message"
SIGNAL_APPROVAL_DECISION = "approval_decision"
SIGNAL_SET_AUTO_APPROVE = "set_auto_approve"
SIGNAL_CLOSE = "close"
SIGNAL_EXTEND_APPROVAL = "extend_approval"
SIGNAL_TOOL_STILL_RUNNING = "tool_still_running"  # sent by an approved tool's activity (ToolRequest)
SIGNAL_POLICY_CHANGED = "policy_changed"  # the new PolicyRules (`rules reload`, workflows/policy_change.py)
SIGNAL_HOST_LEFT = "host_left"  # sent by a stopping worker to each conversation pinned to its host
# Sent by the door that revokes an `approve --always` grant: the conversation forgets that always-allow.
SIGNAL_FORGET_ALWAYS_ALLOW = "forget_always_allow"

# Updates and queries of ConversationWorkflow (the decision updates of an ApprovalRequest too).
UPDATE_DECIDE = "decide"
UPDATE_EXTEND = "extend"
UPDATE_MOVE = "move"
UPDATE_UNDO = "undo"
QUERY_GET_STATE = "get_state"

# A decision, an extension or an edit refused (by the workflow's validators, or by a door's claim
# first: core/refusals.py). The doors answer them with exit status 3, HTTP 404 or 409.
ERROR_UNKNOWN_APPROVAL = "UnknownApproval"
ERROR_ALREADY_RESOLVED = "ApprovalAlreadyResolved"
ERROR_INVALID_DECISION = "InvalidDecision"  # a payload of the wrong shape, or a refusal with no type
ERROR_STALE_APPROVAL = "StaleApproval"
ERROR_NOT_AN_APPROVER = "NotAnApprover"
ERROR_INVALID_EDIT = "InvalidEdit"
ERROR_EDIT_DENIED = "EditDenied"
# An approval without every supplied_by_approver value, a value sent where none goes, or an
# always-allow or grant of a call whose values a person supplies each time.
ERROR_SUPPLY_REFUSED = "SupplyRefused"
ERROR_TOOL_RUNNING = "ToolRunning"  # a move refused while a tool of the conversation runs
ERROR_UNDO_REFUSED = "UndoRefused"
ERROR_REFUSED = "Refused"  # an extension or a move the workflow refused without a type
ERROR_INVALID_REQUEST = "InvalidApprovalRequest"  # an ApprovalRequest's input that does not validate

# What a door says when Temporal did not take what it sent.
ERROR_CONVERSATION_CLOSED = "ConversationClosed"  # the workflow has ended
ERROR_UNDELIVERED = "Undelivered"  # Temporal could not take it now
ERROR_TEMPORAL_REFUSED = "TemporalRefused"  # the same, as Slack's door says it
ERROR_EDIT_UNCHECKED = "EditUnchecked"  # no worker answered to check an edit

# The `error.type` of the approvals UI's own answers (ui/errors.py gives the rest by status).
ERROR_UNKNOWN_REQUEST = "UnknownRequest"
ERROR_QUESTION_EXPIRED = "QuestionExpired"
ERROR_UNKNOWN_CONVERSATION = "UnknownConversation"
ERROR_BAD_GRANT = "BadGrant"
ERROR_GRANT_REFUSED = "GrantRefused"
ERROR_UNKNOWN_GRANT = "UnknownGrant"
ERROR_SLACK_SIGNATURE = "SlackSignature"
ERROR_CROSS_SITE_REQUEST = "CrossSiteRequest"
# A one-time decision link's page (ui/link_routes.py): not ours or damaged, out of time, used once.
ERROR_BAD_LINK = "BadLink"
ERROR_LINK_EXPIRED = "LinkExpired"
ERROR_LINK_USED = "LinkUsed"

# ApplicationError types of the activities, which the workflows' retry policies and failure
# reasons read.
ERROR_NOTIFICATION_REJECTED = "NotificationRejected"  # a channel refused the message for good (4xx)
ERROR_NOT_APPROVED = "NotApproved"  # an approved effect begun without its approval
ERROR_LLM_TIMEOUT = "LlmTimeout"
ERROR_LLM_UNREACHABLE = "LlmUnreachable"
ERROR_LLM_ERROR = "LlmError"
ERROR_LLM_AUTHENTICATION = "LlmAuthentication"  # non-retryable
ERROR_LLM_BAD_REQUEST = "LlmBadRequest"  # non-retryable
ERROR_LLM_SERVER_ERROR = "LlmServerError"  # any other HTTP error, or a refusal the server asks to retry
ERROR_LLM_RATE_LIMITED = "LlmRateLimited"  # 429; retried after the server's retry-after
ERROR_LLM_EMPTY_RESPONSE = "LlmEmptyResponse"
ERROR_LLM_STREAM_CUT = "LlmStreamCut"
ERROR_CONTEXT_WINDOW = "LlmContextWindowExceeded"  # non-retryable: the request does not fit the window

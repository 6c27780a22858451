"""Every `workflow.patched` id, in the order the changes were made.

A conversation waits for days across deploys, so a change of the commands a workflow issues goes
behind a patch: histories recorded before it replay down the old path, new ones record the
marker. The ids are stored in histories (tests/histories/): never rename or reuse one.
"""

from __future__ import annotations

TOOL_CATALOG_ACTIVITY = "tool-catalog-activity"  # the turn's tools listed by an activity
CONTEXT_COMPACTION = "context-compaction"  # older turns folded into a summary past the budget
PIN_TOOLS_TO_HOST = "pin-tools-to-host"  # a conversation's tools run on the host of its first one
SHELL_RULE_NORMALISATION = "shell-rule-normalisation"  # run_shell rules see the command's words
EDIT_BEFORE_APPROVING = "edit-before-approving"  # decisions may edit the arguments
APPROVERS_OUTRANK_AUTO_APPROVE = "approvers-outrank-auto-approve"  # approver rules beat auto-approve
APPROVAL_NOTIFICATIONS = "approval-notifications"  # webhooks, Slack, reminders, escalation
SUBAGENT_DELEGATION = "subagent-delegation"  # the delegate tool starts a child conversation
TOOLS_EAGER_ON_HOST = "tools-eager-on-host"  # a pinned tool tries the workflow's own queue first
RESOLUTION_WITH_THE_TOOL = "resolution-with-the-tool"  # the tool's activity writes its resolution
SWITCH_AUDIT = "switch-audit"  # who closed or switched auto-approve, and through which door
CLOSE_STOPS_MODEL_CALL = "close-stops-model-call"  # close cancels a running model call
FOLD_KEEPS_TURN_REQUEST = "fold-keeps-turn-request"  # compaction keeps the turn's request verbatim
FAILED_SUMMARY_KEEPS_MESSAGES = "failed-summary-keeps-messages"  # no summary: nothing folded
NOTIFICATIONS_CARRIED = "notifications-carried-across-continue-as-new"  # undelivered ones go on
MOVE_CONVERSATION_HOST = "move-conversation-host"  # the move update re-pins a conversation
WORKSPACE_PER_CONVERSATION = "workspace-per-conversation"  # each conversation its own workspace
REQUEST_RESOLUTION_LOCAL = "request-resolution-local"  # an ApprovalRequest mirrors its end in its own task
EFFECT_PREVIEW = "effect-preview"  # asked calls previewed; a write bound to the target it previewed
UNDO_FILE_CHANGE = "undo-file-change"  # an approved write_file undone, as a request of its own
PREVIEW_IN_WORKFLOW_TASK = "preview-in-workflow-task"  # a preview on the workflow's host is a local activity
PATCH_CHECKS_BEFORE_ASKING = "patch-checks-before-asking"  # a decision's patches checked when it is asked
STATUS_WITH_THE_TOOL_RESULT = "status-with-the-tool-result"  # search attributes follow a decision later
TIMERS_AFTER_THE_TOOL = "timers-after-the-tool"  # a decision's task starts and cancels no timer
# A tool whose host no worker polls (a schedule-to-start timeout) or whose host said it left moves
# to a live host. Checked only when one of those happens, never on the way from a decision to its
# tool, so a conversation pinned by an earlier release moves too.
HOST_GONE_MOVES = "host-gone-moves"
GRANTS_DECIDE_ASKED_CALLS = "grants-decide-asked-calls"  # a person's grant may decide an asked call
POLICY_CHANGE_REJUDGES = "policy-change-rejudges"  # new rules by signal re-judge waiting requests
SHADOW_RULES = "shadow-rules"  # [shadow] rules judged beside the live ones, differences recorded
CEDAR_RULES = "cedar-rules"  # [cedar] policies beside the TOML rules: forbid denies, permit allows

# The patches a decided call checks on its way to its tool. The SDK records a marker and a search
# attribute update the first time a run checks a patch; checked when the request opens, those
# land in the asking task instead of the decision's, off the path from a decision to the tool.
CHECKED_WHEN_DECIDED = (
    RESOLUTION_WITH_THE_TOOL,
    TOOLS_EAGER_ON_HOST,
    STATUS_WITH_THE_TOOL_RESULT,
    TIMERS_AFTER_THE_TOOL,
)

ALL = (
    TOOL_CATALOG_ACTIVITY,
    CONTEXT_COMPACTION,
    PIN_TOOLS_TO_HOST,
    SHELL_RULE_NORMALISATION,
    EDIT_BEFORE_APPROVING,
    APPROVERS_OUTRANK_AUTO_APPROVE,
    APPROVAL_NOTIFICATIONS,
    SUBAGENT_DELEGATION,
    TOOLS_EAGER_ON_HOST,
    RESOLUTION_WITH_THE_TOOL,
    SWITCH_AUDIT,
    CLOSE_STOPS_MODEL_CALL,
    FOLD_KEEPS_TURN_REQUEST,
    FAILED_SUMMARY_KEEPS_MESSAGES,
    NOTIFICATIONS_CARRIED,
    MOVE_CONVERSATION_HOST,
    WORKSPACE_PER_CONVERSATION,
    REQUEST_RESOLUTION_LOCAL,
    EFFECT_PREVIEW,
    UNDO_FILE_CHANGE,
    PREVIEW_IN_WORKFLOW_TASK,
    PATCH_CHECKS_BEFORE_ASKING,
    STATUS_WITH_THE_TOOL_RESULT,
    TIMERS_AFTER_THE_TOOL,
    HOST_GONE_MOVES,
    GRANTS_DECIDE_ASKED_CALLS,
    POLICY_CHANGE_REJUDGES,
    SHADOW_RULES,
    CEDAR_RULES,
)

"""Every `workflow.patched` id, in the order the changes were made.

A conversation waits for days across deploys, so a change of the commands a workflow issues goes
behind a patch: histories recorded before it replay down the old path, new ones record the
marker. The ids are stored in histories (tests/histories/): never rename or reuse one.
"""

from __future__ import annotations

TOOL_CATALOG_ACTIVITY = "tool-catalog-activity"  # the turn's tools listed by an activity (before: the built-ins)
# Older turns folded into a summary past the budget, and a model call retried after a context-window error.
CONTEXT_COMPACTION = "context-compaction"
PIN_TOOLS_TO_HOST = "pin-tools-to-host"  # a conversation's tools run on the host of its first one
SHELL_RULE_NORMALISATION = "shell-rule-normalisation"  # run_shell rules see the command's words
EDIT_BEFORE_APPROVING = "edit-before-approving"  # decisions may edit the arguments
# Approver rules outrank auto-approve and always-allow (before, those lifted them).
APPROVERS_OUTRANK_AUTO_APPROVE = "approvers-outrank-auto-approve"
APPROVAL_NOTIFICATIONS = "approval-notifications"  # webhooks, Slack, reminders, escalation
SUBAGENT_DELEGATION = "subagent-delegation"  # the delegate tool starts a child conversation
# A pinned tool tries the workflow's own queue first (before, every one went to its host queue directly).
TOOLS_EAGER_ON_HOST = "tools-eager-on-host"
# An approved tool's activity writes the approval's resolution (before, an activity of its own did).
RESOLUTION_WITH_THE_TOOL = "resolution-with-the-tool"
# Who closed or switched auto-approve, and through which door; an auto-approve switch is written to
# the projection by a new activity, which histories from before skip.
SWITCH_AUDIT = "switch-audit"
CLOSE_STOPS_MODEL_CALL = "close-stops-model-call"  # close cancels a running model call
FOLD_KEEPS_TURN_REQUEST = "fold-keeps-turn-request"  # compaction keeps the turn's request verbatim
# A summary the model could not write folds nothing: tool results are clipped until it is retried.
FAILED_SUMMARY_KEEPS_MESSAGES = "failed-summary-keeps-messages"
# Undelivered notifications are carried across continue-as-new and started again in the new run.
NOTIFICATIONS_CARRIED = "notifications-carried-across-continue-as-new"
MOVE_CONVERSATION_HOST = "move-conversation-host"  # the move update re-pins a conversation
WORKSPACE_PER_CONVERSATION = "workspace-per-conversation"  # each conversation its own workspace
REQUEST_RESOLUTION_LOCAL = "request-resolution-local"  # an ApprovalRequest mirrors its end in its own task
EFFECT_PREVIEW = "effect-preview"  # asked calls previewed; a write bound to the target it previewed
# An approved write_file undone, as a request of its own; a run without the patch refuses an undo.
UNDO_FILE_CHANGE = "undo-file-change"
PREVIEW_IN_WORKFLOW_TASK = "preview-in-workflow-task"  # a preview on the workflow's host is a local activity
PATCH_CHECKS_BEFORE_ASKING = "patch-checks-before-asking"  # a decision's patches checked when it is asked
# The status in Temporal follows with the tool's result, or soon after (before, with the decision).
STATUS_WITH_THE_TOOL_RESULT = "status-with-the-tool-result"
TIMERS_AFTER_THE_TOOL = "timers-after-the-tool"  # a decision's task starts and cancels no timer
# A tool whose host no worker polls (a schedule-to-start timeout) or whose host said it left moves
# to a live host. Checked only when one of those happens, never on the way from a decision to its
# tool, so a conversation pinned by an earlier release moves too.
HOST_GONE_MOVES = "host-gone-moves"
GRANTS_DECIDE_ASKED_CALLS = "grants-decide-asked-calls"  # a person's grant may decide an asked call
POLICY_CHANGE_REJUDGES = "policy-change-rejudges"  # new rules by signal re-judge waiting requests
SHADOW_RULES = "shadow-rules"  # [shadow] rules judged beside the live ones, differences recorded
CEDAR_RULES = "cedar-rules"  # [cedar] policies beside the TOML rules: forbid denies, permit allows
# An ApprovalRequest decided by update hands its resolution to the door that sent the decision,
# which writes it (before, the request's deciding task wrote it by a local activity).
REQUEST_RESOLUTION_BY_THE_DOOR = "request-resolution-by-the-door"
# A turn's start is written by its tool listing's activity (before, by a projection activity of its own).
TURN_START_WITH_THE_LISTING = "turn-start-with-the-listing"
# A turn's tool host is picked while the asked calls are judged (before, one after the other).
HOST_BESIDE_JUDGING = "host-beside-judging"

# The patches a decided call checks on its way to its tool. The SDK records a marker and a search
# attribute update the first time a run checks a patch; checked when the request opens, those
# land in the asking task instead of the decision's, off the path from a decision to the tool.
CHECKED_WHEN_DECIDED = (
    RESOLUTION_WITH_THE_TOOL,
    TOOLS_EAGER_ON_HOST,
    STATUS_WITH_THE_TOOL_RESULT,
    TIMERS_AFTER_THE_TOOL,
)

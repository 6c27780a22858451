// A notification's link, /approvals/REQUEST_ID: open the card's conversation and bring the card into view.

// The request id the address names, or null on any other page.
function linkedRequest() {
  const match = window.location.pathname.match(/^\/approvals\/(.+)$/);
  if (!match) return null;
  try {
    return decodeURIComponent(match[1]);
  } catch {
    return match[1];
  }
}

// Turns the address into the conversation's own (#/conversations/ID); returns the request to focus.
export async function followDeepLink(api, toast) {
  const requestId = linkedRequest();
  if (requestId === null) return null;
  const result = await api(`/api/approvals/${encodeURIComponent(requestId)}`);
  if (!result.ok) {
    window.history.replaceState(null, "", "/");
    toast(`No approval request ${requestId}`, true);
    return null;
  }
  window.history.replaceState(null, "", "/#/conversations/" + encodeURIComponent(result.body.conversation_id));
  return requestId;
}

// Once the card is on the page: mark it and scroll to it. False while it is not rendered yet.
export function focusCard(requestId) {
  const card = [...document.querySelectorAll("#conversation-view .approval")].find(
    (node) => node.dataset.requestId === requestId,
  );
  if (!card) return false;
  card.classList.add("card-linked");
  card.scrollIntoView({ block: "center" });
  return true;
}

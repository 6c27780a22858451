// "Notify me on this device": asks for notification permission only when pressed, subscribes this
// browser with the server's VAPID key (GET /api/push/key) and gives the subscription to the server
// as the signed-in person's (POST /api/push/subscriptions); pressed again, it stops (DELETE).
// The service worker (/sw.js) shows what arrives.

const $ = (id) => document.getElementById(id);
const LABELS = { off: "Notify me on this device", on: "Stop notifying this device" };
let hooks = null;

function supported() {
  return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

// Shown to a signed-in person only: a push goes to a person, and the shared token names nobody.
export async function setupPush(options) {
  hooks = options;
  if (!supported()) return;
  const button = $("push-button");
  button.hidden = false;
  button.addEventListener("click", toggle);
  show("off");
  try {
    const registration = await navigator.serviceWorker.getRegistration("/");
    const current = registration ? await registration.pushManager.getSubscription() : null;
    if (current && Notification.permission === "granted") show("on");
  } catch {
    // No subscription can be read here (a private window, say): the button offers one.
  }
}

function show(state) {
  const button = $("push-button");
  button.dataset.state = state;
  button.textContent = LABELS[state];
}

async function toggle() {
  const button = $("push-button");
  button.disabled = true;
  try {
    if (button.dataset.state === "on") await unsubscribe();
    else await subscribe();
  } catch (error) {
    hooks.toast(`notifications: ${error.message || error}`, true);
  } finally {
    button.disabled = false;
  }
}

async function subscribe() {
  const permission = await Notification.requestPermission();
  if (permission !== "granted") {
    return hooks.toast("notifications are blocked for this site: allow them in the browser's settings", true);
  }
  const key = await hooks.api("/api/push/key");
  if (!key.ok) return hooks.toast(hooks.errorMessage(key), true);
  await navigator.serviceWorker.register("/sw.js", { scope: "/" });
  const registration = await navigator.serviceWorker.ready;
  const subscription = await registration.pushManager.subscribe({
    userVisibleOnly: true,
    applicationServerKey: fromBase64Url(key.body.public_key),
  });
  const saved = await hooks.api("/api/push/subscriptions", { json: subscription.toJSON() });
  if (!saved.ok) {
    await subscription.unsubscribe();
    return hooks.toast(hooks.errorMessage(saved), true);
  }
  show("on");
  hooks.toast("this device will be notified of requests you may decide");
}

async function unsubscribe() {
  const registration = await navigator.serviceWorker.getRegistration("/");
  const subscription = registration ? await registration.pushManager.getSubscription() : null;
  if (subscription) {
    const path = `/api/push/subscriptions?endpoint=${encodeURIComponent(subscription.endpoint)}`;
    const removed = await hooks.api(path, { method: "DELETE" });
    if (!removed.ok && removed.status !== 404) return hooks.toast(hooks.errorMessage(removed), true);
    await subscription.unsubscribe();
  }
  show("off");
  hooks.toast("this device is no longer notified");
}

function fromBase64Url(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
  return Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
}

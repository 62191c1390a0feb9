// Polls the board's fragment every two seconds and swaps it in. The server renders and escapes
// the fragment, so this script only moves HTML it was given into the page, and sends the
// instructor's Approve / Refuse clicks for seats waiting to join.
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const every = 2000;
const auth = {"Authorization": "Bearer " + token};

document.getElementById("csv").href = "/board.csv?token=" + encodeURIComponent(token);

async function refresh() {
  const status = document.getElementById("status");
  try {
    const answer = await fetch("/api/board", {headers: auth, cache: "no-store"});
    if (!answer.ok) {
      status.textContent = answer.status === 401 ? "This link has no valid instructor token." : "The board answered " + answer.status + ".";
      return;
    }
    document.getElementById("board").innerHTML = await answer.text();
    status.textContent = "";
  } catch (problem) {
    status.textContent = "Cannot reach the board; retrying.";
  }
}

document.getElementById("board").addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  button.disabled = true;
  await fetch("/api/seats/" + button.dataset.action, {method: "POST", headers: {...auth, "Content-Type": "application/json"},
                                                      body: JSON.stringify({name: button.dataset.name})});
  refresh();
});

refresh();
setInterval(refresh, every);

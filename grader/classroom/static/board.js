// Polls the board's fragment every two seconds and swaps it in. The server renders and escapes
// the fragment, so this script only moves HTML it was given into the page.
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const every = 2000;

document.getElementById("csv").href = "/board.csv?token=" + encodeURIComponent(token);

async function refresh() {
  const status = document.getElementById("status");
  try {
    const answer = await fetch("/api/board", {headers: {"Authorization": "Bearer " + token}, cache: "no-store"});
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

refresh();
setInterval(refresh, every);

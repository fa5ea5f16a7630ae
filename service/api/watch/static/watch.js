// The watch page: the public table of one match, drawn from its event stream (EventSource).
// The stream starts with the public view; every event after it is applied to that view here,
// so the page needs no other request. A reconnect gets a fresh view (the events it already
// holds, up to view.last_seq, are skipped). Everything shown comes from the spectator's
// stream: a hand is only ever drawn as card backs.
"use strict";

(function () {
  const body = document.body;
  const api = body.dataset.api;
  const SVG = "http://www.w3.org/2000/svg";
  const RANK_NAMES = { A: "A", T: "10", J: "J", Q: "Q", K: "K" };
  const SUIT_SIGNS = { s: "\u2660", h: "\u2665", d: "\u2666", c: "\u2663" };
  const EVENT_TYPES = ["cut", "deal", "dealt", "draw", "pass", "discard", "knock", "layoff", "advice", "timeout",
    "hand_scored", "resign", "abort", "match_finished", "rematch"];
  const LOG_KEPT = 40;
  const RETRY_MS = 5000;

  let view = null;
  let source = null;
  let turnStarted = 0;
  let spread = null; // the knock (and lay-down) on the table this hand
  const byId = (id) => document.getElementById(id);

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function suitIcon(suit) {
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 100 100");
    svg.setAttribute("aria-hidden", "true");
    const use = document.createElementNS(SVG, "use");
    use.setAttribute("href", "#suit-" + suit);
    svg.appendChild(use);
    return svg;
  }

  function cardName(code) {
    return (RANK_NAMES[code[0]] || code[0]) + SUIT_SIGNS[code[1]];
  }

  function isRed(code) {
    return code[1] === "h" || code[1] === "d";
  }

  function card(code) {
    const node = el("div", "card " + (isRed(code) ? "red" : "black"));
    node.setAttribute("role", "img");
    node.setAttribute("aria-label", cardName(code));
    node.dataset.card = code;
    for (const where of ["tl", "br"]) {
      const corner = el("span", "corner " + where, RANK_NAMES[code[0]] || code[0]);
      corner.appendChild(suitIcon(code[1]));
      node.appendChild(corner);
    }
    const pip = el("span", "pip");
    pip.appendChild(suitIcon(code[1]));
    node.appendChild(pip);
    return node;
  }

  function back() {
    const node = el("div", "card back");
    node.setAttribute("aria-hidden", "true");
    return node;
  }

  function cardText(code) {
    const span = el("span", "c " + (isRed(code) ? "red" : ""), cardName(code));
    return span;
  }

  function nameOf(seat) {
    return seat === null || seat === undefined ? "?" : view.players[seat].name;
  }

  // --- drawing -----------------------------------------------------------------------------
  function render() {
    renderSeats();
    renderPiles();
    renderSpread();
    renderTurn();
    renderScores();
    renderBanner();
  }

  function renderSeats() {
    const top = byId("top");
    const bottom = byId("bottom");
    top.replaceChildren();
    bottom.replaceChildren();
    const hand = view.hand;
    view.players.forEach((player, seat) => {
      const node = el("article", "seat");
      node.dataset.seat = String(seat);
      if (hand && hand.turn === seat) node.classList.add("to-act");
      const head = el("header");
      const dot = el("span", "dot" + (player.online ? " on" : ""));
      dot.title = player.online ? "at the table" : "away";
      head.append(dot, el("span", "name", player.name));
      const role = roleOf(seat);
      if (role) head.appendChild(el("span", "badge " + role, role));
      if (player.bot) head.appendChild(el("span", "badge", "bot"));
      node.appendChild(head);
      const cards = el("div", "hand");
      const size = hand ? hand.hand_sizes[String(seat)] : undefined;
      const laidDown = hand && hand.knock && hand.knock.knocker === seat;
      if (size === undefined || laidDown) {
        const note = laidDown ? "cards on the table" : hand && role === "sitter" ? "advises the captain" : "";
        cards.appendChild(el("span", "none", note));
      } else {
        for (let n = 0; n < size; n += 1) cards.appendChild(back());
      }
      cards.setAttribute("aria-label", size === undefined ? "no cards" : size + " cards");
      node.appendChild(cards);
      const points = el("div", "points");
      points.append("score ", el("b", "", String(player.score)), size === undefined ? "" : " · " + size + " cards");
      node.appendChild(points);
      (seat === 0 ? bottom : top).appendChild(node);
    });
  }

  function roleOf(seat) {
    return view.players[seat].role;
  }

  function renderPiles() {
    const hand = view.hand;
    const stock = byId("stock").querySelector(".slot");
    const pile = byId("discard").querySelector(".slot");
    stock.replaceChildren();
    pile.replaceChildren();
    if (!hand) return;
    if (hand.stock_count > 0) stock.appendChild(back());
    stock.appendChild(el("span", "count", String(hand.stock_count)));
    const shown = el("div", "stack");
    for (const code of hand.discard_pile.slice(-4)) shown.appendChild(card(code));
    pile.appendChild(shown);
    if (hand.discard_pile.length > 4) pile.appendChild(el("span", "count", String(hand.discard_pile.length)));
  }

  function renderSpread() {
    const node = byId("spread");
    node.replaceChildren();
    const knock = view.hand && view.hand.knock ? view.hand.knock : spread;
    if (!knock) {
      node.hidden = true;
      return;
    }
    node.hidden = false;
    const title = knock.gin ? nameOf(knock.knocker) + " goes gin" :
      nameOf(knock.knocker) + " knocks with " + knock.deadwood;
    node.appendChild(el("h3", "", title));
    knock.melds.forEach((meld, index) => {
      const group = el("div", "meld");
      meld.forEach((code) => group.appendChild(card(code)));
      for (const laid of (knock.layoffs || []).filter((l) => l.meld === index)) {
        const added = card(laid.card);
        added.classList.add("laid");
        group.appendChild(added);
      }
      node.appendChild(group);
    });
    if (knock.deadwood_cards.length) {
      const dead = el("div", "meld deadwood");
      knock.deadwood_cards.forEach((code) => dead.appendChild(card(code)));
      node.appendChild(dead);
    }
    if (knock.defender_melds) {
      node.appendChild(el("h3", "", nameOf(knock.defender) + " lays down, " + knock.defender_deadwood + " left"));
      knock.defender_melds.forEach((meld) => {
        const group = el("div", "meld");
        meld.forEach((code) => group.appendChild(card(code)));
        node.appendChild(group);
      });
    }
  }

  function renderTurn() {
    const node = byId("turn");
    node.replaceChildren();
    const hand = view.hand;
    if (!hand || hand.turn === null || hand.turn === undefined) return;
    node.append(nameOf(hand.turn) + " to play");
    const seconds = view.rules.turn_seconds;
    if (seconds) node.appendChild(el("span", "clock", ""));
    tick();
  }

  function tick() {
    const clock = byId("turn").querySelector(".clock");
    if (!clock || !view.hand) return;
    const left = Math.max(0, Math.ceil(view.rules.turn_seconds - (Date.now() - turnStarted) / 1000));
    clock.textContent = "⏱ " + left + " s";
  }

  function renderScores() {
    const rows = byId("scores").tBodies[0];
    rows.replaceChildren();
    view.players.forEach((player) => {
      const row = el("tr");
      const who = el("td", "", player.name);
      who.appendChild(el("span", "won", player.hands_won + (player.hands_won === 1 ? " hand" : " hands")));
      row.append(who, el("td", "", String(player.score)));
      rows.appendChild(row);
    });
    byId("target").textContent = "first to " + view.rules.target_score + " points";
  }

  function renderBanner() {
    const node = byId("banner");
    node.replaceChildren();
    const result = view.result;
    if (!result) {
      node.hidden = true;
      return;
    }
    node.hidden = false;
    if (result.status === "aborted") {
      node.appendChild(el("h2", "", "Match called off"));
    } else {
      node.appendChild(el("h2", "", nameOf(result.winner) + " wins the match"));
      if (result.forfeit !== null && result.forfeit !== undefined) {
        node.appendChild(el("p", "", nameOf(result.forfeit) + " resigned"));
      }
    }
    node.appendChild(el("p", "", result.players.map((line) => nameOf(line.seat) + " " + line.total).join(" · ")));
    if (view.rematch_id) {
      const link = el("a", "", "Watch the rematch");
      link.href = "/watch/" + encodeURIComponent(view.rematch_id);
      node.appendChild(el("p")).appendChild(link);
    }
  }

  // --- the log -------------------------------------------------------------------------------
  function log(parts) {
    const line = el("li");
    for (const part of parts) line.append(part);
    const list = byId("log");
    list.prepend(line);
    while (list.children.length > LOG_KEPT) list.lastChild.remove();
  }

  function handResult(event) {
    const line = el("li");
    line.append("Hand " + event.number + ": ");
    if (event.winner === null) {
      line.append("dead hand, no score");
    } else {
      line.append(nameOf(event.winner) + " ", el("b", "", "+" + event.points));
    }
    line.appendChild(el("span", "outcome", event.outcome));
    byId("hands").prepend(line);
  }

  // --- applying events to the view ---------------------------------------------------------
  const apply = {
    deal(event) {
      const hand = {
        number: event.number, dealer: event.dealer, phase: "upcard_offer", turn: event.turn,
        stock_count: event.stock_count, discard_pile: [event.upcard], hand_sizes: {},
      };
      event.roles.forEach((role, seat) => {
        view.players[seat].role = role;
        if (role !== "sitter") hand.hand_sizes[String(seat)] = 10;
      });
      view.hand = hand;
      spread = null;
    },
    draw(event) {
      const hand = view.hand;
      hand.hand_sizes[String(event.seat)] += 1;
      if (event.source === "stock") {
        hand.stock_count -= 1;
      } else {
        hand.discard_pile.pop();
      }
    },
    discard(event) {
      view.hand.hand_sizes[String(event.seat)] -= 1;
      view.hand.discard_pile.push(event.card);
    },
    knock(event) {
      const hand = view.hand;
      hand.hand_sizes[String(event.seat)] -= 1;
      hand.discard_pile.push(event.discard);
      hand.knock = { knocker: event.knocker, melds: event.melds, deadwood_cards: event.deadwood_cards,
        deadwood: event.deadwood, gin: event.gin };
    },
    layoff(event) {
      const knock = view.hand.knock;
      if (!knock) return;
      knock.layoffs = event.layoffs;
      knock.defender = event.seat;
      knock.defender_melds = event.melds;
      knock.defender_deadwood = event.deadwood;
      spread = knock;
    },
    timeout(event) {
      view.players[event.seat].timeouts = event.timeouts;
    },
    hand_scored(event) {
      if (event.winner !== null) {
        view.players[event.winner].score += event.points;
        view.players[event.winner].hands_won += 1;
      }
      view.last_hand = event;
      view.hand = null;
      handResult(event);
    },
    match_finished(event) {
      view.status = event.status;
      view.hand = null;
      view.result = { status: event.status, winner: event.winner, forfeit: event.forfeit, players: event.players };
    },
    rematch(event) {
      view.rematch_id = event.game_id;
    },
  };

  // What the log says of an event (the names are the view's).
  const describe = {
    deal: (e) => ["Hand " + e.number + " dealt by " + nameOf(e.dealer) + "; the upcard is ", cardText(e.upcard)],
    draw: (e) => e.source === "stock" ? [nameOf(e.seat) + " draws from the stock"] :
      [nameOf(e.seat) + " takes ", cardText(e.card)],
    pass: (e) => [nameOf(e.seat) + " passes on ", cardText(e.card)],
    discard: (e) => [nameOf(e.seat) + " discards ", cardText(e.card)],
    knock: (e) => [nameOf(e.seat) + (e.gin ? " goes gin!" : " knocks with " + e.deadwood + " deadwood")],
    layoff: (e) => {
      const laid = e.layoffs.length;
      return [nameOf(e.seat) + " lays down" + (laid ? " and lays off " + laid + (laid === 1 ? " card" : " cards") : "")];
    },
    timeout: (e) => ["Time is up for " + nameOf(e.seat) + ": the house plays"],
    hand_scored: (e) => [e.winner === null ? "Dead hand" : nameOf(e.winner) + " scores " + e.points +
      " (" + e.outcome + ")"],
    resign: (e) => [nameOf(e.seat) + " resigns"],
    abort: () => ["The match is called off"],
    match_finished: (e) => [e.status === "aborted" ? "Match over" : "Match over: " + nameOf(e.winner) + " wins"],
    rematch: () => ["A rematch was set up"],
  };

  function told(event) {
    const say = describe[event.type];
    if (say) log(say(event));
  }

  // Opened in the middle of a match: the hands played and the last actions, from the history.
  function history(lastSeq) {
    if (byId("log").children.length || lastSeq === 0) return;
    fetch(api + "/events?after=0", { headers: { Accept: "application/json" } })
      .then((answer) => (answer.ok ? answer.json() : { events: [] }))
      .then((page) => {
        if (byId("log").children.length) return;
        const past = page.events.filter((event) => event.seq <= lastSeq);
        byId("hands").replaceChildren();
        past.filter((event) => event.type === "hand_scored").forEach(handResult);
        past.slice(-12).forEach(told);
      })
      .catch(() => {});
  }

  function onEvent(message) {
    const event = JSON.parse(message.data);
    if (!view || event.seq <= view.last_seq) return; // already in the view
    view.last_seq = event.seq;
    const step = apply[event.type];
    if (step) step(event);
    told(event);
    if (view.hand && "turn" in event) {
      if (view.hand.turn !== event.turn) turnStarted = Date.now();
      view.hand.turn = event.turn;
    }
    render();
    if (event.type === "match_finished") finish();
  }

  function onView(message) {
    view = JSON.parse(message.data);
    spread = null;
    turnStarted = Date.now();
    render();
    history(view.last_seq);
    if (view.result) {
      finish();
    } else {
      status("live", "live");
    }
  }

  function onPresence(message) {
    const change = JSON.parse(message.data);
    if (!view) return;
    view.players[change.seat].online = change.online;
    renderSeats();
    log([nameOf(change.seat) + (change.online ? " is at the table" : " left the table")]);
  }

  function status(text, kind) {
    const node = byId("status");
    node.textContent = text;
    node.className = "status " + kind;
  }

  function finish() {
    status("match over", "over");
    if (source) source.close();
    source = null;
  }

  function connect() {
    source = new EventSource(api + "/stream");
    source.addEventListener("view", onView);
    source.addEventListener("presence", onPresence);
    for (const type of EVENT_TYPES) source.addEventListener(type, onEvent);
    source.onerror = () => {
      if (!source) return;
      if (source.readyState === EventSource.CLOSED) {
        // Refused (the match does not exist, or the server is full): try again later.
        status("cannot follow this match; trying again", "trouble");
        source = null;
        setTimeout(connect, RETRY_MS);
      } else {
        status("reconnecting…", "trouble");
      }
    };
  }

  setInterval(tick, 1000);
  connect();
})();

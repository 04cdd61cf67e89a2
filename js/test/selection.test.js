// @ts-check
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

const { placeAskButton } = require("../selection.js");

const VIEW = { width: 1280, height: 800 };
const BUTTON = { width: 140, height: 32 };

/**
 * @param {number} top
 * @param {number} bottom
 * @param {number} left
 * @param {number} right
 */
const box = (top, bottom, left, right) => ({ top, bottom, left, right });

/** @param {{top: number, left: number} | null} at */
function inView(at) {
  assert.ok(at, "placed");
  assert.ok(at.top >= 8 && at.top + BUTTON.height <= VIEW.height - 8, `top ${at.top}`);
  assert.ok(at.left >= 8 && at.left + BUTTON.width <= VIEW.width - 8, `left ${at.left}`);
  return at;
}

test("below the last line, centred on its end", () => {
  const at = inView(placeAskButton([box(100, 120, 200, 900), box(120, 140, 200, 500)], BUTTON, VIEW));
  assert.deepEqual(at, { top: 148, left: 430 });
});

test("above the last line when there is no room below", () => {
  const at = inView(placeAskButton([box(770, 790, 300, 600)], BUTTON, VIEW));
  assert.deepEqual(at, { top: 770 - 32 - 8, left: 530 });
});

test("kept inside the viewport at the sides", () => {
  assert.equal(inView(placeAskButton([box(100, 120, 0, 20)], BUTTON, VIEW)).left, 8);
  assert.equal(inView(placeAskButton([box(100, 120, 1200, 1280)], BUTTON, VIEW)).left, 1280 - 140 - 8);
});

test("a selection taller than the viewport: at its visible end, not thousands of pixels below", () => {
  // the case: a 7,967 px list selected from its top, seen at the top of the page
  const lines = [];
  for (let y = 300; y < 300 + 7967; y += 24) lines.push(box(y, y + 20, 120, 700));
  const list = box(290, 290 + 7967, 100, 900); // the list's own box comes along
  const at = inView(placeAskButton([list, ...lines], BUTTON, VIEW));
  assert.ok(at.top > VIEW.height / 2, `near the bottom edge, where the selection leaves the screen: ${at.top}`);
  // scrolled into the middle of it: still on screen
  const shifted = [list, ...lines].map((r) => box(r.top - 4000, r.bottom - 4000, r.left, r.right));
  inView(placeAskButton(shifted, BUTTON, VIEW));
  // its end scrolled into view: right below the last line again
  const end = [list, ...lines].map((r) => box(r.top - 7800, r.bottom - 7800, r.left, r.right));
  const last = end[end.length - 1];
  assert.equal(inView(placeAskButton(end, BUTTON, VIEW)).top, Math.round(last.bottom + 8));
});

test("one box as tall as the screen (a whole figure or table)", () => {
  inView(placeAskButton([box(-500, 3000, 100, 900)], BUTTON, VIEW));
});

test("nothing on screen: no place", () => {
  assert.equal(placeAskButton([box(-300, -280, 100, 300)], BUTTON, VIEW), null);
  assert.equal(placeAskButton([box(900, 920, 100, 300)], BUTTON, VIEW), null);
  assert.equal(placeAskButton([], BUTTON, VIEW), null);
  assert.equal(placeAskButton([box(100, 100, 50, 50)], BUTTON, VIEW), null, "empty box");
});

test("the end is the last visible box: a later line below the screen does not count", () => {
  const at = inView(placeAskButton([box(600, 620, 100, 400), box(820, 840, 100, 300)], BUTTON, VIEW));
  assert.deepEqual(at, { top: 628, left: 330 });
});

test("a viewport smaller than the button still gives a place", () => {
  const at = placeAskButton([box(10, 30, 10, 50)], BUTTON, { width: 100, height: 40 });
  assert.deepEqual(at, { top: 8, left: 8 });
});

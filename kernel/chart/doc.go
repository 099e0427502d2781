// Package chart draws the evaluation and reach reports as SVG bar charts
// with gonum's plotting library, so that a reader can compare profiles at
// a glance instead of reading a table.
//
// [SVG] takes panels of grouped bars ([Panel], one group per category,
// one bar per [Series]) and stacks them in one picture. The output is
// deterministic: the same data gives the same bytes, so charts can be
// golden files.
package chart

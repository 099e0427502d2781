package verify

// Statuses exposes the package's error table to its tests.
var Statuses = statuses

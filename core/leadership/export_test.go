package leadership

// MaxFinalTries exposes maxFinalTries to the external tests.
const MaxFinalTries = maxFinalTries

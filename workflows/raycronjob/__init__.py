"""The RayCronJob workflows and the rules they follow.

One workflow per RayCronJob keeps its Temporal Schedule in step with it (`workflow`); each
firing of the Schedule is a short workflow that creates one RayJob (`firing`); `decisions`
holds the rules as pure functions.
"""

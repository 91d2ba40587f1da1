# cmake/JiffyMissingTool.cmake - the command of a test whose program is missing
# (JiffyTestTools.cmake): fails with the message naming the program and how to install it.
#   cmake -DJIFFY_MISSING_TOOL=<message> -P JiffyMissingTool.cmake
message(FATAL_ERROR "${JIFFY_MISSING_TOOL}")

# SPDX-License-Identifier: MIT
#
# Runs inside `cmake --install`: copies the configured libumcg.pc with its
# prefix= line set to the prefix being installed to (CMAKE_INSTALL_PREFIX
# here is the --prefix value, without DESTDIR).
#
# In: UMCG_PC_CONFIGURED (the configured file), UMCG_PC_INSTALLED (output).

file(READ "${UMCG_PC_CONFIGURED}" _umcg_pc)
string(REGEX REPLACE "(^|\n)prefix=[^\n]*" "\\1prefix=${CMAKE_INSTALL_PREFIX}" _umcg_pc "${_umcg_pc}")
file(WRITE "${UMCG_PC_INSTALLED}" "${_umcg_pc}")

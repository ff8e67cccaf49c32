out=$(sh add.sh 2 3)
[ "$out" = 5 ] || { echo "add 2 3 gave $out, expected 5"; exit 1; }

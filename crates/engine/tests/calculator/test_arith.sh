sh test_add.sh && sh test_mul.sh
